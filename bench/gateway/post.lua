-- wrk script for bench/gateway/run: POST a small JSON body with an Idempotency-Key header.
-- The environment picks the load:
--   MODE=unique     a new key for every request
--   MODE=replay10   each key 10 times, nearly at once (see below)
--   MODE=replays    keys KEYSET-<thread>-0 .. KEYS-1, round and round: once a bench has
--                   completed them all through idem, every request is a replay
--   MODE=unmatched  the same request to TARGET (default /other), which no route protects
--   TARGET          the target (default /orders)
--   RUN             a tag that keeps the unique keys of one wrk run apart from another's
--
-- replay10: wrk runs one Lua state per thread, shared by all of that thread's connections,
-- and calls request() whenever one of them is ready to send. The key sequence is per
-- thread, so the 10 consecutive request() calls that share a key go out on 10 different
-- connections (a connection waits for its answer before it asks again), all within about
-- the time the thread takes to send 10 requests, far less than one request's latency:
-- the 10 are in flight together, as duplicates from retrying clients are, instead of one
-- after the other on one connection (where all but the first would be plain replays).
local mode = os.getenv("MODE") or "unique"
local path = os.getenv("TARGET") or "/orders"
local keys = tonumber(os.getenv("KEYS") or "2000")
local keyset = os.getenv("KEYSET") or "ks"
local run = os.getenv("RUN") or "0"
local threads = {}
local counter = 0
local prefix = ""

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  if mode == "replays" then
    prefix = string.format("%s-%d-", keyset, id)
  else
    prefix = string.format("%x-%s-%d-", os.time(), run, id)
  end
end

function request()
  local n = counter
  counter = counter + 1
  if mode == "replay10" then
    n = math.floor(n / 10)
  elseif mode == "replays" then
    n = n % keys
  end
  local key = prefix .. n
  return wrk.format("POST", path, {
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = key,
  }, '{"sku":"A-1","qty":1,"key":"' .. key .. '"}')
end

function done(summary, latency, requests)
  io.write(string.format("RESULT rps=%.0f p50_us=%d p99_us=%d requests=%d non2xx=%d sockerr=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    summary.requests, summary.errors.status, summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout))
end
