-- wrk script: POST a small JSON body with an Idempotency-Key header.
-- Unique keys by default; with REPEAT=N in the environment each key is sent N times in a
-- row (a replay-heavy load: the first request runs upstream, the next N-1 are replays).
local repeat_n = tonumber(os.getenv("REPEAT") or "1")
local threads = {}
local counter = 0
local prefix = ""

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  prefix = string.format("%x-%d-", os.time(), id)
end

function request()
  local n = math.floor(counter / repeat_n)
  counter = counter + 1
  local key = prefix .. n
  return wrk.format("POST", "/orders", {
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = key,
  }, '{"sku":"A-1","qty":1,"key":"' .. key .. '"}')
end

function done(summary, latency, requests)
  local non2xx = summary.errors.status
  io.write(string.format("RESULT rps=%.0f p50_us=%d p99_us=%d requests=%d non2xx=%d sockerr=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99),
    summary.requests, non2xx, summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout))
end
