// The store runs one io_context thread that owns every connection (redis_client.h).
// Callers' threads only format the command and post it there; answers run on that thread,
// outside any lock.
#include "stores/redis/redis_store.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <charconv>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/listing.h"
#include "core/state_machine.h"
#include "stores/redis/redis_client.h"
#include "stores/redis/redis_keys.h"
#include "stores/redis/redis_tls.h"

namespace idem::redis {
namespace {

using Kind = BeginOutcome::Kind;

// ---- reading replies -------------------------------------------------------------------

bool is_int(const redisReply* r) { return r && r->type == REDIS_REPLY_INTEGER; }
bool is_string(const redisReply* r) { return r && r->type == REDIS_REPLY_STRING; }
std::string text(const redisReply* r) { return std::string(r->str, r->len); }

// The i-th element of an array reply, or nullptr.
const redisReply* at(const redisReply& r, std::size_t i) {
  return r.type == REDIS_REPLY_ARRAY && i < r.elements ? r.element[i] : nullptr;
}

bool parse_int(const redisReply* r, std::int64_t& out) {
  if (!is_string(r)) return false;
  const auto [end, ec] = std::from_chars(r->str, r->str + r->len, out);
  return ec == std::errc() && end == r->str + r->len;
}

Status unexpected(const char* op) { return internal_error(std::string("redis: unexpected reply to ") + op); }

Result<BeginOutcome> parse_begin(const redisReply& r) {
  const redisReply* kind = at(r, 0);
  const redisReply* a = at(r, 1);
  const redisReply* b = at(r, 2);
  if (!is_int(kind)) return unexpected("begin");
  switch (kind->integer) {
    case 0:
      if (const redisReply* c = at(r, 3); is_int(a) && is_int(b) && is_int(c))
        return BeginOutcome::acquired(static_cast<Fence>(a->integer), b->integer != 0,
                                      static_cast<Fence>(c->integer));
      break;
    case 1:
      if (const redisReply* c = at(r, 3); is_int(a) && is_string(b) && is_int(c))
        return BeginOutcome::replay(static_cast<Fence>(a->integer), text(b), Duration(c->integer));
      break;
    case 2:
      if (is_int(a)) return BeginOutcome::in_progress(Duration(std::max<long long>(a->integer, 1)));
      break;
    case 3:
      return BeginOutcome::mismatch();
  }
  return unexpected("begin");
}

// {st, fence, fp, lu or '', ea, res or '', owner or ''}
Result<std::optional<Record>> parse_record(const redisReply& r, const RecordId& id) {
  if (r.type == REDIS_REPLY_NIL) return std::optional<Record>();
  std::int64_t fence = 0, lease_until = 0, expires_at = 0;
  const redisReply* state = at(r, 0);
  if (!is_string(state) || !parse_int(at(r, 1), fence) || !is_string(at(r, 2)) ||
      !parse_int(at(r, 4), expires_at) || !is_string(at(r, 5)) || !is_string(at(r, 6))) {
    return unexpected("get");
  }
  Record rec;
  rec.scope = id.scope;
  rec.key = id.key;
  rec.state = text(state) == "d" ? RecordState::done : RecordState::pending;
  rec.fence = static_cast<Fence>(fence);
  rec.fingerprint = text(at(r, 2));
  if (rec.state == RecordState::pending) {
    if (!parse_int(at(r, 3), lease_until)) return unexpected("get");
    rec.lease_until = from_micros(lease_until);
  }
  rec.expires_at = from_micros(expires_at);
  rec.result = text(at(r, 5));
  rec.owner = text(at(r, 6));
  return std::optional<Record>(std::move(rec));
}

// A script answering 1 or 0: `yes` or `no`.
template <class T>
auto flag(T yes, T no, const char* op) {
  return [yes, no, op](const redisReply& r) -> Result<T> {
    if (!is_int(&r)) return unexpected(op);
    return r.integer ? yes : no;
  };
}

Result<LockOutcome> parse_lock(const redisReply& r) {
  const redisReply* kind = at(r, 0);
  const redisReply* value = at(r, 1);
  if (!is_int(kind) || !is_int(value)) return unexpected("lock");
  if (kind->integer == 0) return LockOutcome::locked(static_cast<Fence>(value->integer));
  return LockOutcome::busy(Duration(std::max<long long>(value->integer, 1)));
}

std::string micros(Duration d) { return std::to_string(d.count()); }

// The replies that wrote what a failover must not lose (wait=N): a claim, a commit.
bool acquired(const redisReply& r) {
  const redisReply* kind = at(r, 0);
  return is_int(kind) && kind->integer == 0;
}
bool committed(const redisReply& r) { return is_int(&r) && r.integer == 1; }

// "maxmemory_policy:allkeys-lru\r\n" in INFO memory; empty when absent.
std::string maxmemory_policy(const redisReply& info) {
  if (info.type != REDIS_REPLY_STRING) return {};
  const std::string_view text(info.str, info.len);
  constexpr std::string_view kField = "maxmemory_policy:";
  const auto at = text.find(kField);
  if (at == std::string_view::npos) return {};
  const auto from = at + kField.size();
  return std::string(text.substr(from, text.find_first_of("\r\n", from) - from));
}

// CONFIG GET's value as a number (the reply is [name, value]); nullopt for
// an error (CONFIG forbidden) or anything else.
std::optional<std::uint64_t> config_value(const Result<Reply>& r) {
  if (!r) return std::nullopt;
  const redisReply& reply = **r;
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2) return std::nullopt;
  const redisReply* value = reply.element[1];
  if (value->type != REDIS_REPLY_STRING) return std::nullopt;
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(value->str, value->str + value->len, n);
  if (ec != std::errc() || end != value->str + value->len || n == 0) return std::nullopt;
  return n;
}

// ---- listing -----------------------------------------------------------------------------

// Keys one SCAN step looks at (COUNT), and the steps one list call takes at most: a call's
// work stays bounded however few records match.
constexpr std::string_view kScanCount = "1000";
constexpr int kMaxScanSteps = 8;

// Where a listing goes on: the node (cluster: the master serving `slot`; the slot of its
// first range, so masters are visited in the order of their slots), the SCAN cursor of the
// step to run, and how many of that step's keys were already shown.
struct ScanPosition {
  int slot = 0;
  std::string scan = "0";
  std::uint64_t skip = 0;
};

// "s<slot>.<scan cursor>.<skip>"
std::string encode(const ScanPosition& p) {
  return "s" + std::to_string(p.slot) + "." + p.scan + "." + std::to_string(p.skip);
}

bool parse_number(std::string_view text, std::uint64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

Result<ScanPosition> decode_scan(std::string_view cursor) {
  const auto dot1 = cursor.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : cursor.find('.', dot1 + 1);
  std::uint64_t slot = 0, scan = 0, skip = 0;
  if (!cursor.starts_with('s') || dot2 == std::string_view::npos ||
      !parse_number(cursor.substr(1, dot1 - 1), slot) || slot >= kSlots ||
      !parse_number(cursor.substr(dot1 + 1, dot2 - dot1 - 1), scan) ||
      !parse_number(cursor.substr(dot2 + 1), skip)) {
    return invalid_argument("cursor: not a cursor this store handed out");
  }
  return ScanPosition{static_cast<int>(slot), std::to_string(scan), skip};
}

// CLUSTER SLOTS: the first slot of each master, ascending.
Result<std::vector<int>> parse_masters(const redisReply& r) {
  if (r.type != REDIS_REPLY_ARRAY) return unexpected("CLUSTER SLOTS");
  std::map<std::string, long long> first;
  for (std::size_t i = 0; i < r.elements; ++i) {
    const redisReply* range = r.element[i];
    const redisReply* start = at(*range, 0);
    const redisReply* master = at(*range, 2);
    const redisReply* host = master ? at(*master, 0) : nullptr;
    const redisReply* port = master ? at(*master, 1) : nullptr;
    if (!is_int(start) || !is_string(host) || !is_int(port)) return unexpected("CLUSTER SLOTS");
    const std::string name = text(host) + ":" + std::to_string(port->integer);
    auto [it, fresh] = first.try_emplace(name, start->integer);
    if (!fresh) it->second = std::min(it->second, start->integer);
  }
  std::vector<int> out;
  for (const auto& [name, slot] : first) out.push_back(static_cast<int>(slot));
  std::sort(out.begin(), out.end());
  return out;
}

struct ScanStep {
  std::string next;
  std::vector<std::string> keys;
};

Result<ScanStep> parse_scan(const redisReply& r) {
  const redisReply* next = at(r, 0);
  const redisReply* keys = at(r, 1);
  if (!is_string(next) || !keys || keys->type != REDIS_REPLY_ARRAY) return unexpected("SCAN");
  ScanStep out{text(next), {}};
  for (std::size_t i = 0; i < keys->elements; ++i) {
    if (!is_string(keys->element[i])) return unexpected("SCAN");
    out.keys.push_back(text(keys->element[i]));
  }
  return out;
}

// A server's error reply: authentication and permissions are the configuration's to fix;
// anything else is unexpected.
Status error_status(const std::string& store, const redisReply& reply, const char* op) {
  const std::string error(reply.str, reply.len);
  std::string message = store + ": " + op + ": " + error;
  for (const char* p : {"NOAUTH", "NOPERM", "WRONGPASS"}) {
    if (error.rfind(p, 0) == 0) return failed_precondition(std::move(message));
  }
  return internal_error(std::move(message));
}

// A store operation's call: answers its caller with the parsed reply. The call, its
// callback (inline in Callback) and its parser are one allocation.
template <class T, class Parse>
struct StoreCall final : Call {
  StoreCall(Callback<T> cb, Parse parse, const std::string& store, const char* op)
      : cb_(std::move(cb)), parse_(std::move(parse)), store_(store), op_(op) {}

  void answer(Result<Reply> r) override {
    auto caller = std::move(cb_);  // nothing of the caller's stays with the call
    if (!r) return caller(r.status());
    const redisReply& reply = **r;
    if (reply.type == REDIS_REPLY_ERROR) return caller(error_status(store_, reply, op_));
    caller(parse_(reply));
  }

 private:
  Callback<T> cb_;
  Parse parse_;
  const std::string& store_;  // Client::describe(), which outlives every call
  const char* op_;            // the script's name, or the command's
};

class RedisStore final : public Store {
 public:
  RedisStore(Config config, const StoreOptions& options, std::shared_ptr<asio::ssl::context> tls)
      : cluster_(config.cluster),
        prefix_(config.prefix),
        wait_replicas_(config.wait_replicas),
        op_timeout_(options.op_timeout),
        work_(asio::make_work_guard(io_)),
        client_(io_, std::move(config), options.op_timeout, std::move(tls)) {
    thread_ = std::thread([this] { io_.run(); });
  }

  // Waits for every call in flight (each is bounded by op_timeout), then closes.
  ~RedisStore() override {
    asio::post(io_, [this] { client_.shutdown([this] { work_.reset(); }); });
    thread_.join();
  }

  const StoreTraits& traits() const noexcept override {
    static constexpr StoreTraits kRedis{"redis", /*native_expiry=*/true, /*durable=*/false,
                                        /*controllable_clock=*/false};
    static constexpr StoreTraits kCluster{"redis-cluster", true, false, false};
    return cluster_ ? kCluster : kRedis;
  }

  // Refuses a server that may evict keys (maxmemory-policy other than noeviction): an
  // evicted record is a duplicate execution. Every master of a cluster is asked. INFO, not
  // CONFIG GET: managed Redis services allow the first where they disable the second.
  Status refuse_eviction() {
    Result<MasterReplies> info = ask_masters({"INFO", "memory"});
    if (!info) return info.status();
    return judge_eviction(info->names, info->replies);
  }

  // Reads the largest bulk string the servers take (proto-max-bulk-len; a cluster's
  // smallest), which bounds a commit's result: a larger argument is refused with an error.
  // A server that does not answer CONFIG GET (managed services often forbid it) is taken to
  // have Redis's default, 512 MB.
  void read_max_bulk() {
    Result<MasterReplies> config = ask_masters({"CONFIG", "GET", "proto-max-bulk-len"});
    if (!config) return;
    std::uint64_t least = kDefaultMaxBulk;
    for (const Result<Reply>& r : config->replies) {
      if (auto bytes = config_value(r)) least = std::min(least, *bytes);
    }
    max_result_bytes_ = least;
  }

  std::uint64_t max_result_bytes() const noexcept override { return max_result_bytes_; }

 protected:
  void do_begin(BeginArgs a, Callback<BeginOutcome> cb) override {
    const auto k = record_keys(prefix_, a.scope, a.key);
    const std::string lease = micros(a.lease), retention = micros(a.retention);
    eval(scripts().begin, {k.main, k.fence}, {a.fingerprint, lease, retention, a.owner}, std::move(cb),
         parse_begin, &acquired);
  }

  void do_commit(CommitArgs a, Callback<CommitOutcome> cb) override {
    const auto k = record_keys(prefix_, a.scope, a.key);
    const std::string fence = std::to_string(a.fence), retention = micros(a.retention);
    eval(scripts().commit, {k.main, k.fence}, {fence, a.result, retention, a.over_uncertain}, std::move(cb),
         flag(CommitOutcome::committed, CommitOutcome::fenced, "commit"), &committed);
  }

  void do_release(ReleaseArgs a, Callback<ReleaseOutcome> cb) override {
    const auto k = record_keys(prefix_, a.scope, a.key);
    const std::string fence = std::to_string(a.fence);
    auto answer = flag(ReleaseOutcome::released, ReleaseOutcome::fenced, "release");
    if (!a.restore_token) return eval(scripts().release, {k.main}, {fence}, std::move(cb), std::move(answer));
    const TokenRestore& t = *a.restore_token;
    if (cluster_ && !same_slot(a.scope, a.key, t.token)) {
      // One script cannot touch two slots, and two scripts would not be one atomic step.
      return cb(invalid_argument(
          "redis-cluster: a release can restore a token only when the record's key is the token or ends "
          "in ':' and the token (they then share a slot)"));
    }
    eval(scripts().release, {k.main, token_key(prefix_, a.scope, t.token)}, {fence, micros(t.ttl)},
         std::move(cb), std::move(answer));
  }

  void do_abandon(AbandonArgs a, Callback<ReleaseOutcome> cb) override {
    const auto k = record_keys(prefix_, a.scope, a.key);
    eval(scripts().abandon, {k.main}, {a.owner}, std::move(cb),
         flag(ReleaseOutcome::released, ReleaseOutcome::fenced, "abandon"));
  }

  void do_extend(ExtendArgs a, Callback<ExtendOutcome> cb) override {
    const auto k = record_keys(prefix_, a.scope, a.key);
    const std::string fence = std::to_string(a.fence), lease = micros(a.lease);
    eval(scripts().extend, {k.main, k.fence}, {fence, lease}, std::move(cb),
         flag(ExtendOutcome::extended, ExtendOutcome::fenced, "extend"));
  }

  void do_get(RecordId a, Callback<std::optional<Record>> cb) override {
    const auto k = record_keys(prefix_, a.scope, a.key);
    eval(scripts().get, {k.main}, {}, std::move(cb),
         [id = std::move(a)](const redisReply& r) { return parse_record(r, id); });
  }

  void do_remove(RecordId a, Callback<bool> cb) override {
    const auto k = record_keys(prefix_, a.scope, a.key);
    eval(scripts().remove, {k.main}, {}, std::move(cb), flag(true, false, "remove"));
  }

  // SCAN with MATCH over record keys, unordered (docs/admin.md); the records are read with
  // the get script (expired ones are absent) and filtered here. redis-cluster:// scans
  // every master in turn.
  void do_list(ListArgs a, Callback<ListPage> cb) override {
    auto run = std::make_shared<ListRun>();
    if (!a.cursor.empty()) {
      auto p = decode_scan(a.cursor);
      if (!p) return cb(p.status());
      run->at = std::move(*p);
      run->resumed = true;
    }
    run->pattern = record_pattern(prefix_, a.scope, a.key_prefix);
    run->args = std::move(a);
    run->cb = std::move(cb);
    if (!cluster_) return scan_step(std::move(run));
    submit(format_command({"CLUSTER", "SLOTS"}), -1,
           Callback<std::vector<int>>([this, run](Result<std::vector<int>> masters) mutable {
             if (!masters) return run->cb(masters.status());
             if (masters->empty()) return run->cb(ListPage{});
             run->masters = std::move(*masters);
             if (!run->resumed) run->at.slot = run->masters.front();
             scan_step(std::move(run));
           }),
           parse_masters, "CLUSTER SLOTS");
  }

  // Redis expires keys by itself (native_expiry): nothing to sweep.
  void do_sweep(Callback<std::uint64_t> cb) override { cb(std::uint64_t{0}); }

  void do_issue_token(IssueTokenArgs a, Callback<std::string> cb) override {
    auto token = core::random_token();
    if (!token) return cb(token.status());
    const std::string key = token_key(prefix_, a.scope, *token), ttl = micros(a.ttl);
    eval(scripts().issue_token, {key}, {ttl}, std::move(cb),
         [token = std::move(*token)](const redisReply& r) -> Result<std::string> {
           if (!is_int(&r)) return unexpected("issue_token");
           return token;
         });
  }

  void do_consume_token(TokenArgs a, Callback<ConsumeOutcome> cb) override {
    const std::string key = token_key(prefix_, a.scope, a.token);
    eval(scripts().consume_token, {key}, {}, std::move(cb),
         flag(ConsumeOutcome::consumed, ConsumeOutcome::invalid, "consume_token"));
  }

  void do_restore_token(RestoreTokenArgs a, Callback<RestoreOutcome> cb) override {
    const std::string key = token_key(prefix_, a.scope, a.token), ttl = micros(a.ttl);
    eval(scripts().restore_token, {key}, {ttl}, std::move(cb),
         flag(RestoreOutcome::restored, RestoreOutcome::invalid, "restore_token"));
  }

  void do_lock(LockArgs a, Callback<LockOutcome> cb) override {
    const auto k = lock_keys(prefix_, a.name);
    const std::string ttl = micros(a.ttl);
    eval(scripts().lock, {k.main, k.fence}, {a.owner, ttl}, std::move(cb), parse_lock);
  }

  void do_unlock(UnlockArgs a, Callback<UnlockOutcome> cb) override {
    const auto k = lock_keys(prefix_, a.name);
    eval(scripts().unlock, {k.main}, {a.owner}, std::move(cb),
         flag(UnlockOutcome::released, UnlockOutcome::not_owner, "unlock"));
  }

  void do_extend_lock(LockArgs a, Callback<LockExtendOutcome> cb) override {
    const auto k = lock_keys(prefix_, a.name);
    const std::string ttl = micros(a.ttl);
    eval(scripts().extend_lock, {k.main, k.fence}, {a.owner, ttl}, std::move(cb),
         flag(LockExtendOutcome::extended, LockExtendOutcome::not_owner, "extend_lock"));
  }

  void do_ping(Callback<Done> cb) override {
    submit(
        format_command({"PING"}), -1, std::move(cb), [](const redisReply&) -> Result<Done> { return Done{}; },
        "PING");
  }

 private:
  struct ListRun {
    ListArgs args;
    std::string pattern;
    Callback<ListPage> cb;
    ScanPosition at;
    bool resumed = false;
    std::vector<int> masters;  // cluster: each master's first slot, ascending
    ScanStep step;             // the keys of the SCAN step at `at`
    std::vector<std::optional<Record>> fetched;
    ListPage page;
    int steps = 0;
  };
  using ListRunPtr = std::shared_ptr<ListRun>;

  void scan_step(ListRunPtr run) {
    const int slot = run->at.slot;
    const std::string scan = run->at.scan;
    submit(format_command({"SCAN", scan, "MATCH", run->pattern, "COUNT", kScanCount}), cluster_ ? slot : -1,
           Callback<ScanStep>([this, run](Result<ScanStep> step) mutable {
             if (!step) return run->cb(step.status());
             run->step = std::move(*step);
             ++run->steps;
             fetch_keys(std::move(run));
           }),
           parse_scan, "SCAN");
  }

  // Reads the step's records after `skip`, as many at once as the page still needs.
  void fetch_keys(ListRunPtr run) {
    const auto& keys = run->step.keys;
    const std::size_t from = std::min<std::size_t>(run->at.skip, keys.size());
    const std::size_t n = std::min(keys.size() - from, run->args.limit - run->page.records.size());
    if (n == 0) return after_step(std::move(run));
    run->fetched.assign(n, std::nullopt);
    auto pending = std::make_shared<std::size_t>(n);
    for (std::size_t i = 0; i < n; ++i) {
      RecordId id;
      if (!parse_record_key(prefix_, keys[from + i], id.scope, id.key) ||
          !id.key.starts_with(run->args.key_prefix) || (run->args.scope && id.scope != *run->args.scope)) {
        if (--*pending == 0) take_fetched(run);
        continue;
      }
      const std::string key = keys[from + i];
      eval(scripts().get, {key}, {},
           Callback<std::optional<Record>>([this, run, pending, i](Result<std::optional<Record>> r) mutable {
             if (!r) {
               run->fetched.clear();
               if (std::exchange(*pending, 0) != 0) run->cb(r.status());
               return;
             }
             if (*pending == 0) return;  // the listing already failed
             run->fetched[i] = std::move(*r);
             if (--*pending == 0) take_fetched(std::move(run));
           }),
           [id = std::move(id)](const redisReply& r) { return parse_record(r, id); });
    }
  }

  void take_fetched(ListRunPtr run) {
    for (auto& r : run->fetched) {
      if (r && core::matches(*r, run->args)) run->page.records.push_back(std::move(*r));
    }
    run->at.skip += run->fetched.size();
    run->fetched.clear();
    if (run->page.records.size() < run->args.limit && run->at.skip < run->step.keys.size()) {
      return fetch_keys(std::move(run));
    }
    after_step(std::move(run));
  }

  // The step's keys are read (or the page is full): where the next step starts, and
  // whether this call takes it.
  void after_step(ListRunPtr run) {
    ScanPosition& at = run->at;
    const bool step_done = at.skip >= run->step.keys.size();
    bool finished = false;
    if (step_done) {
      at.skip = 0;
      if (run->step.next != "0") {
        at.scan = run->step.next;
      } else {
        at.scan = "0";
        const auto next = std::upper_bound(run->masters.begin(), run->masters.end(), at.slot);
        if (next == run->masters.end()) {
          finished = true;
        } else {
          at.slot = *next;
        }
      }
    }
    if (!finished && run->page.records.size() < run->args.limit && run->steps < kMaxScanSteps) {
      return scan_step(std::move(run));
    }
    if (!finished) run->page.next_cursor = encode(at);
    run->cb(std::move(run->page));
  }

  // EVALSHA script numkeys keys... args...: all keys share one slot (redis_keys.h). The
  // command is written straight into the call's buffer.
  template <class T, class Parse>
  void eval(const Script& script, std::initializer_list<std::string_view> keys,
            std::initializer_list<std::string_view> args, Callback<T> cb, Parse parse,
            bool (*needs_wait)(const redisReply&) = nullptr) {
    char digits[8];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, keys.size());
    const std::string_view numkeys(digits, static_cast<std::size_t>(end - digits));
    auto call = make_call(std::move(cb), std::move(parse), script.name, needs_wait);
    std::string& w = call->wire;
    std::size_t size = 16 + bulk_size("EVALSHA") + bulk_size(script.sha1) + bulk_size(numkeys);
    for (std::string_view k : keys) size += bulk_size(k);
    for (std::string_view a : args) size += bulk_size(a);
    w.reserve(size);
    append_command_header(w, 3 + keys.size() + args.size());
    append_bulk(w, "EVALSHA");
    append_bulk(w, script.sha1);
    append_bulk(w, numkeys);
    for (std::string_view k : keys) append_bulk(w, k);
    for (std::string_view a : args) append_bulk(w, a);
    call->script = &script;
    call->slot = cluster_ ? key_slot(*keys.begin()) : -1;
    enqueue(std::move(call));
  }

  // `command` names the call in error messages.
  template <class T, class Parse>
  void submit(std::string wire, int slot, Callback<T> cb, Parse parse, const char* command) {
    auto call = make_call(std::move(cb), std::move(parse), command, nullptr);
    call->wire = std::move(wire);
    call->slot = slot;
    enqueue(std::move(call));
  }

  template <class T, class Parse>
  std::shared_ptr<StoreCall<T, Parse>> make_call(Callback<T> cb, Parse parse, const char* op,
                                                 bool (*needs_wait)(const redisReply&)) {
    auto call =
        std::make_shared<StoreCall<T, Parse>>(std::move(cb), std::move(parse), client_.describe(), op);
    if (needs_wait) {
      call->wait_replicas = wait_replicas_;
      call->needs_wait = needs_wait;
    }
    call->deadline = SteadyClock::now() + op_timeout_;
    return call;
  }

  // Hands the call to the store's thread. Calls made while that thread is busy wait in
  // the inbox and are taken together, with one wake-up, and so leave in one write.
  void enqueue(CallPtr call) {
    bool first = false;
    {
      std::lock_guard lock(inbox_mutex_);
      first = inbox_.empty();
      inbox_.push_back(std::move(call));
    }
    if (first) asio::post(io_, [this] { drain_inbox(); });
  }

  void drain_inbox() {
    {
      std::lock_guard lock(inbox_mutex_);
      draining_.swap(inbox_);
    }
    for (CallPtr& c : draining_) client_.start(std::move(c));
    draining_.clear();
  }

  static constexpr std::uint64_t kDefaultMaxBulk = 512ull << 20;

  struct MasterReplies {
    std::vector<std::string> names;
    std::vector<Result<Reply>> replies;
  };

  // Sends `command` to every master (the one server of redis://) and waits for every answer.
  Result<MasterReplies> ask_masters(std::initializer_list<std::string_view> command) {
    struct Gather {
      MasterReplies out;
      std::size_t left = 0;
      std::promise<Result<MasterReplies>> done;
    };
    auto g = std::make_shared<Gather>();
    auto answer = g->done.get_future();
    asio::post(io_, [this, g, wire = format_command(command)] {
      const auto masters = client_.masters();
      g->left = masters.size();
      if (masters.empty()) return g->done.set_value(unavailable(client_.describe() + ": no master is known"));
      for (Connection* m : masters) {
        g->out.names.push_back(m->name());
        g->out.replies.emplace_back(unavailable("no answer"));
      }
      for (std::size_t i = 0; i < masters.size(); ++i) {
        auto call = std::make_shared<Call>();
        call->wire = wire;
        call->deadline = SteadyClock::now() + op_timeout_;
        call->complete = [g, i](Result<Reply> r) {
          g->out.replies[i] = std::move(r);
          if (--g->left == 0) g->done.set_value(std::move(g->out));
        };
        client_.start_pinned(*masters[i], std::move(call));
      }
    });
    return answer.get();
  }

  Status judge_eviction(const std::vector<std::string>& names,
                        const std::vector<Result<Reply>>& replies) const {
    for (std::size_t i = 0; i < replies.size(); ++i) {
      if (!replies[i]) return replies[i].status();
      const redisReply& r = **replies[i];
      const std::string where = (cluster_ ? "redis-cluster master " : "redis ") + names[i];
      const std::string policy = maxmemory_policy(r);
      if (policy == "noeviction") continue;
      const std::string found =
          r.type == REDIS_REPLY_ERROR
              ? "cannot read maxmemory-policy (INFO memory failed: " + std::string(r.str, r.len) + ")"
          : policy.empty() ? "cannot read maxmemory-policy (INFO memory does not show maxmemory_policy)"
                           : "maxmemory-policy is " + policy;
      return failed_precondition(
          where + ": " + found +
          ", so Redis may evict idempotency records under memory pressure, and an evicted record "
          "is a duplicate execution. Set maxmemory-policy to noeviction (CONFIG SET maxmemory-policy "
          "noeviction, or maxmemory-policy noeviction in redis.conf), or accept the risk with "
          "?allow_eviction=true in the store URI");
    }
    return Status::ok();
  }

  const bool cluster_;
  const std::string prefix_;
  const int wait_replicas_;
  std::uint64_t max_result_bytes_ = kDefaultMaxBulk;  // set by read_max_bulk before the store is shared
  const Duration op_timeout_;
  asio::io_context io_{1};  // one thread: its own posts need no lock
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  Client client_;
  std::mutex inbox_mutex_;
  std::vector<CallPtr> inbox_;     // guarded by inbox_mutex_: calls not yet on the store's thread
  std::vector<CallPtr> draining_;  // the store's thread only: the inbox being started
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<Store>> open(std::string_view uri, const StoreOptions& options) {
  auto config = parse_uri(uri);
  if (!config) return config.status();
  if (options.op_timeout.count() <= 0) return invalid_argument("redis: op_timeout must be greater than 0");
  const bool allow_eviction = config->allow_eviction;
  std::shared_ptr<asio::ssl::context> tls;
  if (config->tls.on) {
    auto context = make_tls_context(config->tls);
    if (!context) return context.status();
    tls = std::move(*context);
  }
  auto store = std::make_unique<RedisStore>(std::move(*config), options, std::move(tls));
  if (auto ping = store->ping(); !ping) return ping.status();
  if (!allow_eviction) {
    if (auto s = store->refuse_eviction(); !s) return s;
  }
  store->read_max_bulk();
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace idem::redis
