#include "stores/redis/redis_client.h"

#include <algorithm>
#include <charconv>

#include "stores/redis/redis_keys.h"

namespace idem::redis {
namespace {

using namespace std::chrono_literals;

// Connections to the one node of redis://: several let a large reply on one not hold up
// the others.
constexpr std::size_t kPoolSize = 2;
constexpr Duration kMinRetryDelay = 5ms;
constexpr Duration kMaxRetryDelay = 500ms;
constexpr int kMaxRedirects = 16;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Errors that prove the command did not run and may succeed later.
bool retryable(std::string_view error) {
  for (std::string_view p : {"TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "READONLY", "BUSY "}) {
    if (starts_with(error, p)) return true;
  }
  return false;
}

// The same call as EVAL: "*N\r\n$7\r\nEVALSHA\r\n$40\r\n<sha>\r\n<rest>" becomes
// "*N\r\n$4\r\nEVAL\r\n$<len>\r\n<script>\r\n<rest>".
std::string eval_form(const Call& c) {
  const std::size_t header = c.wire.find("\r\n") + 2;
  const std::size_t rest = header + std::string_view("$7\r\nEVALSHA\r\n$40\r\n").size() + 40 + 2;
  std::string out = c.wire.substr(0, header);
  out += "$4\r\nEVAL\r\n$" + std::to_string(c.script->text.size()) + "\r\n";
  out += c.script->text;
  out += "\r\n";
  out.append(c.wire, rest);
  return out;
}

std::string millis(Duration d) { return std::to_string(d.count() / 1000) + " ms"; }

bool parse_port(std::string_view text, std::uint16_t& port) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0 || v > 65535) return false;
  port = static_cast<std::uint16_t>(v);
  return true;
}

}  // namespace

Client::Client(asio::io_context& io, Config config, Duration op_timeout,
               std::shared_ptr<asio::ssl::context> tls)
    : io_(io),
      config_(std::move(config)),
      op_timeout_(op_timeout),
      tls_(std::move(tls)),
      retry_timer_(io),
      retry_delay_(kMinRetryDelay),
      deadline_timer_(io) {
  const std::string scheme = config_.tls.on ? "rediss" : "redis";
  description_ = config_.cluster    ? scheme + "-cluster "
                 : config_.sentinel ? scheme + "+sentinel " + config_.master_name + " via "
                                    : scheme + " ";
  for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
    description_ += (i ? "," : "") + to_string(config_.nodes[i]);
  }
  if (config_.cluster) {
    slots_.assign(kSlots, nullptr);
  } else if (config_.sentinel) {
    master_config_ = config_;
    master_config_.check_role = true;
    sentinel_config_ = config_;
    sentinel_config_.user = config_.sentinel_user;
    sentinel_config_.password = config_.sentinel_password;
    sentinel_config_.db = 0;
    for (const Endpoint& e : config_.nodes) {
      sentinels_.push_back(std::make_unique<Connection>(io_, e, sentinel_config_, op_timeout_, *this, tls_));
    }
  } else {
    for (std::size_t i = 0; i < kPoolSize; ++i) {
      pool_.push_back(
          std::make_unique<Connection>(io_, config_.nodes.front(), config_, op_timeout_, *this, tls_));
    }
  }
}

Client::~Client() = default;

void Client::start(CallPtr call) {
  if (closing_) {
    call->done = true;
    return call->answer(unavailable(description_ + ": the store is closing"));
  }
  ++outstanding_;
  deadlines_.push_back(call);
  arm_deadline();
  dispatch(std::move(call));
}

void Client::start_pinned(Connection& to, CallPtr call) {
  call->pinned = true;
  ++outstanding_;
  deadlines_.push_back(call);
  arm_deadline();
  to.send(std::move(call));
}

std::vector<Connection*> Client::masters() {
  if (!config_.cluster) {
    if (pool_.empty() || (config_.sentinel && master_stale_)) return {};
    return {pool_.front().get()};
  }
  std::vector<Connection*> out;
  for (Connection* c : slots_) {
    if (c && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

void Client::shutdown(std::function<void()> stopped) {
  closing_ = true;
  on_stopped_ = std::move(stopped);
  if (outstanding_ == 0) stop();
}

void Client::stop() {
  stopped_ = true;
  for (auto& c : pool_) c->close();
  for (auto& c : retired_) c->close();
  for (auto& c : sentinels_) c->close();
  for (auto& [name, c] : nodes_) c->close();
  retry_timer_.cancel();
  deadline_timer_.cancel();
  if (on_stopped_) std::exchange(on_stopped_, nullptr)();
}

void Client::finish(Call& call, Result<Reply> result) {
  if (call.done) return;
  call.done = true;
  --outstanding_;
  call.answer(std::move(result));
  while (!deadlines_.empty() && deadlines_.front()->done) deadlines_.pop_front();
  if (closing_ && outstanding_ == 0 && !stopped_) stop();
}

// ---- routing ---------------------------------------------------------------------------

void Client::dispatch(CallPtr call) {
  if (call->done) return;
  Connection* to = route(*call);
  if (!to) return park(std::move(call));
  to->send(std::move(call));
}

Connection* Client::route(const Call& call) {
  if (config_.sentinel && (master_stale_ || pool_.empty())) return nullptr;  // ask the sentinels first
  if (!config_.cluster) return pool_[next_++ % pool_.size()].get();
  if (call.slot >= 0) return slots_[call.slot];
  return any_master_;
}

Connection& Client::connection_for(const Endpoint& e) {
  auto& c = nodes_[to_string(e)];
  if (!c) c = std::make_unique<Connection>(io_, e, config_, op_timeout_, *this, tls_);
  return *c;
}

void Client::on_reply(Connection& from, CallPtr call, Reply reply) {
  if (call->done) return;
  if (reply->type == REDIS_REPLY_ERROR) {
    const std::string_view error(reply->str, reply->len);
    if (starts_with(error, "NOSCRIPT") && call->script && call->eval_wire.empty()) {
      // The server lost its script cache (a restart, SCRIPT FLUSH): EVAL loads it again.
      call->eval_wire = eval_form(*call);
      call->sent = false;
      call->asking = call->asked;  // still in the middle of an ASK redirect
      return from.send(std::move(call));
    }
    if (starts_with(error, "MOVED ") || starts_with(error, "ASK "))
      return redirect(from, std::move(call), error);
    if (retryable(error) && !call->pinned) {
      call->sent = false;
      last_error_ = "redis " + from.name() + ": " + std::string(error);
      slots_stale_ = true;
      // READONLY: a master demoted by a failover; ask the sentinels where it went.
      if (is_master_connection(from)) master_stale_ = true;
      return park(std::move(call));
    }
  }
  retry_delay_ = kMinRetryDelay;
  if (call->wait_replicas > 0 && reply->type != REDIS_REPLY_ERROR && call->needs_wait &&
      call->needs_wait(*reply)) {
    return wait_for_replicas(from, std::move(call), std::move(reply));
  }
  finish(*call, std::move(reply));
}

// WAIT N ms on the connection that ran the write: WAIT counts the replicas that have every
// write of this connection so far. Fewer than N by the deadline: the write is on the
// master but a failover may lose it, so the outcome is unknown (docs/stores.md).
void Client::wait_for_replicas(Connection& on, CallPtr call, Reply reply) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(call->deadline - SteadyClock::now());
  const std::string replicas = std::to_string(call->wait_replicas);
  // A quarter of the time left is kept for WAIT's answer to come back; 0 would block.
  const std::string timeout = std::to_string(std::max<long long>(1, left.count() - left.count() / 4));
  auto wait = std::make_shared<Call>();
  wait->wire = format_command({"WAIT", replicas, timeout});
  wait->deadline = call->deadline;
  call->awaiting_replicas = true;
  wait->complete = [this, call, reply = std::move(reply), node = on.name()](Result<Reply> r) mutable {
    if (r && (*r)->type == REDIS_REPLY_INTEGER && (*r)->integer >= call->wait_replicas) {
      return finish(*call, std::move(reply));
    }
    std::string why;
    if (!r) {
      why = r.status().message();
    } else if ((*r)->type == REDIS_REPLY_INTEGER) {
      why = "only " + std::to_string((*r)->integer) + " of " + std::to_string(call->wait_replicas) +
            " replicas acknowledged it within op_timeout (" + millis(op_timeout_) + ")";
    } else {
      why = "WAIT failed: " + ((*r)->type == REDIS_REPLY_ERROR ? std::string((*r)->str, (*r)->len)
                                                               : std::string("unexpected reply"));
    }
    finish(*call, deadline_exceeded(description_ + ": the write was applied on " + node +
                                    " but may be lost in a failover, so the outcome is unknown (wait=" +
                                    std::to_string(call->wait_replicas) + ": " + why + ")"));
  };
  start_pinned(on, std::move(wait));
}

// "MOVED 3999 127.0.0.1:6381" (the slot lives there now) or "ASK 3999 127.0.0.1:6381"
// (this once, ask there: the slot is migrating).
void Client::redirect(Connection& from, CallPtr call, std::string_view error) {
  const bool ask = starts_with(error, "ASK ");
  const auto space = error.find(' ', ask ? 4 : 6);
  const std::string_view target = space == std::string_view::npos ? "" : error.substr(space + 1);
  const auto colon = target.rfind(':');
  Endpoint e;
  int slot = -1;
  const std::string_view slot_text = error.substr(ask ? 4 : 6, space - (ask ? 4 : 6));
  std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), slot);
  if (colon == std::string_view::npos || !parse_port(target.substr(colon + 1), e.port) || slot < 0 ||
      slot >= kSlots) {
    return finish(*call, internal_error(description_ + ": cannot follow '" + std::string(error) + "'"));
  }
  e.host = std::string(target.substr(0, colon));
  if (e.host.empty()) e.host = from.endpoint().host;  // the node does not know its own address
  if (e.host.size() > 2 && e.host.front() == '[') e.host = e.host.substr(1, e.host.size() - 2);
  if (++call->redirects > kMaxRedirects) {
    return finish(*call,
                  unavailable(description_ + ": redirected more than " + std::to_string(kMaxRedirects) +
                              " times (last: " + std::string(error) + ")"));
  }
  call->sent = false;
  Connection& to = connection_for(e);
  if (ask) {
    call->asking = true;
  } else if (config_.cluster) {
    slots_[slot] = &to;
    slots_stale_ = true;
    refresh_slots();
  }
  to.send(std::move(call));
}

void Client::on_down(Connection& from, std::vector<CallPtr> unsent, std::vector<CallPtr> written, Status why,
                     bool reached) {
  last_error_ = why.message();
  // Written and not answered: the server may have run it (docs/stores.md).
  for (CallPtr& c : written) {
    finish(*c,
           deadline_exceeded(description_ + ": lost the connection to " + from.name() +
                             " after sending the command; the outcome is unknown (" + why.message() + ")"));
  }
  slots_stale_ = true;
  if (is_master_connection(from)) master_stale_ = true;
  // No connection could be made: the calls waiting for it fail now rather than at their
  // deadline (a cluster's wait for a new slot map instead, as a failover moves the slot).
  const bool fail_now = !reached && !config_.cluster;
  for (CallPtr& c : unsent) {
    if (why.code() == StatusCode::failed_precondition || c->pinned) {
      finish(*c, why);
    } else if (fail_now) {
      finish(*c, unavailable((config_.sentinel ? description_ + ": master " : std::string()) + why.message() +
                             " (cannot connect, so nothing was applied)"));
    } else {
      park(std::move(c));
    }
  }
}

// ---- waiting and retrying ----------------------------------------------------------------

void Client::park(CallPtr call) {
  parked_.push_back(std::move(call));
  // The first map (the first master) is fetched at once; after that, refreshes wait for
  // the backoff.
  if (config_.cluster && !first_refresh_ && !refreshing_) {
    first_refresh_ = true;
    return refresh_slots();
  }
  if (config_.sentinel && !first_refresh_ && !finding_master_) {
    first_refresh_ = true;
    return find_master();
  }
  schedule_retry();
}

void Client::schedule_retry() {
  if (retry_armed_ || stopped_) return;
  retry_armed_ = true;
  retry_timer_.expires_after(retry_delay_);
  retry_delay_ = std::min(retry_delay_ * 2, kMaxRetryDelay);
  retry_timer_.async_wait([this](boost::system::error_code ec) {
    retry_armed_ = false;
    if (ec || stopped_) return;
    if (config_.cluster && slots_stale_) return refresh_slots();  // dispatches when it has the map
    if (config_.sentinel && master_stale_) return find_master();  // dispatches when it has the master
    dispatch_parked();
  });
}

void Client::dispatch_parked() {
  auto parked = std::move(parked_);
  parked_.clear();
  for (CallPtr& c : parked) dispatch(std::move(c));
}

// ---- the cluster's slot map ----------------------------------------------------------------

// Asks the seeds and the known masters in turn, one at a time.
void Client::refresh_slots() {
  if (refreshing_ || stopped_ || !config_.cluster) return;
  refreshing_ = true;
  std::vector<Endpoint> candidates = config_.nodes;
  for (const auto& [name, c] : nodes_) {
    if (std::find(candidates.begin(), candidates.end(), c->endpoint()) == candidates.end()) {
      candidates.push_back(c->endpoint());
    }
  }
  Connection& to = connection_for(candidates[refresh_turn_++ % candidates.size()]);
  auto call = std::make_shared<Call>();
  call->wire = format_command({"CLUSTER", "SLOTS"});
  call->deadline = SteadyClock::now() + op_timeout_;
  call->complete = [this, &to](Result<Reply> r) { on_slots(to, std::move(r)); };
  start_pinned(to, std::move(call));
}

// CLUSTER SLOTS: [[start, end, [host, port, id...], replicas...], ...]
void Client::on_slots(const Connection& from, Result<Reply> result) {
  refreshing_ = false;
  std::vector<Connection*> next(kSlots, nullptr);
  std::string problem;
  if (!result) {
    problem = result.status().message();
  } else if ((*result)->type != REDIS_REPLY_ARRAY) {
    problem =
        "redis " + from.name() + ": CLUSTER SLOTS answered " +
        ((*result)->type == REDIS_REPLY_ERROR ? std::string((*result)->str, (*result)->len) : "no array");
  } else {
    const redisReply& r = **result;
    for (std::size_t i = 0; i < r.elements && problem.empty(); ++i) {
      const redisReply* range = r.element[i];
      if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
          range->element[0]->type != REDIS_REPLY_INTEGER || range->element[1]->type != REDIS_REPLY_INTEGER ||
          range->element[2]->type != REDIS_REPLY_ARRAY || range->element[2]->elements < 2 ||
          range->element[2]->element[0]->type != REDIS_REPLY_STRING ||
          range->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
        problem = "redis " + from.name() + ": CLUSTER SLOTS answered in an unknown form";
        break;
      }
      const long long first = range->element[0]->integer, last = range->element[1]->integer;
      const redisReply* master = range->element[2];
      Endpoint e{std::string(master->element[0]->str, master->element[0]->len),
                 static_cast<std::uint16_t>(master->element[1]->integer)};
      if (e.host.empty() || e.host == "?") e.host = from.endpoint().host;
      Connection* c = &connection_for(e);
      for (long long s = std::max(0LL, first); s <= last && s < kSlots; ++s) next[s] = c;
    }
  }
  if (problem.empty()) {
    slots_ = std::move(next);
    any_master_ = nullptr;
    slots_stale_ = false;
    for (Connection* c : slots_) {
      if (!c) slots_stale_ = true;  // a slot nobody serves: ask again later
      if (!any_master_) any_master_ = c;
    }
    // The backoff stays: a fresh map may still name a master that is down (a failover in
    // progress); only an answered call resets it.
    dispatch_parked();
    return;
  }
  last_error_ = problem;
  if (!parked_.empty()) schedule_retry();
}

// ---- the master of redis+sentinel:// ----------------------------------------------------------

bool Client::is_master_connection(const Connection& c) const {
  if (!config_.sentinel) return false;
  for (const auto& p : pool_) {
    if (p.get() == &c) return true;
  }
  return false;
}

// Asks the sentinels in turn, starting with the one that answered last, until one gives
// the master's address.
void Client::find_master() {
  if (finding_master_ || stopped_) return;
  finding_master_ = true;
  sentinel_errors_.clear();
  ask_sentinel(0);
}

void Client::ask_sentinel(std::size_t turn) {
  if (turn >= sentinels_.size()) {
    finding_master_ = false;
    last_error_ = description_ + ": no sentinel gave the address of master '" + config_.master_name + "' (" +
                  sentinel_errors_ + ")";
    // Nothing can be sent anywhere: the waiting calls learn it now, not at their deadline.
    auto parked = std::move(parked_);
    parked_.clear();
    for (CallPtr& c : parked) finish(*c, unavailable(last_error_ + "; nothing was applied"));
    return;
  }
  Connection& to = *sentinels_[(next_sentinel_ + turn) % sentinels_.size()];
  auto call = std::make_shared<Call>();
  call->wire = format_command({"SENTINEL", "get-master-addr-by-name", config_.master_name});
  call->deadline = SteadyClock::now() + op_timeout_;
  call->complete = [this, &to, turn](Result<Reply> r) { on_master(to, turn, std::move(r)); };
  start_pinned(to, std::move(call));
}

// SENTINEL get-master-addr-by-name: [host, port], or nil for a name it does not watch.
void Client::on_master(Connection& sentinel, std::size_t turn, Result<Reply> result) {
  if (stopped_) return;
  std::string problem;
  if (!result) {
    problem = result.status().message();
  } else {
    const redisReply& r = **result;
    Endpoint e;
    if (r.type == REDIS_REPLY_ARRAY && r.elements == 2 && r.element[0]->type == REDIS_REPLY_STRING &&
        r.element[1]->type == REDIS_REPLY_STRING &&
        parse_port(std::string_view(r.element[1]->str, r.element[1]->len), e.port)) {
      e.host.assign(r.element[0]->str, r.element[0]->len);
      finding_master_ = false;
      next_sentinel_ = (next_sentinel_ + turn) % sentinels_.size();
      return use_master(e);
    }
    problem = "sentinel " + sentinel.name() +
              (r.type == REDIS_REPLY_NIL || (r.type == REDIS_REPLY_ARRAY && r.elements == 0)
                   ? " watches no master of that name"
               : r.type == REDIS_REPLY_ERROR ? ": " + std::string(r.str, r.len)
                                             : ": an unexpected answer to SENTINEL get-master-addr-by-name");
  }
  sentinel_errors_ += (sentinel_errors_.empty() ? "" : "; ") + problem;
  ask_sentinel(turn + 1);
}

// Sends the waiting calls to `master`: on the same pool when the address did not change
// (its connections check ROLE again as they reconnect), else on a new one; the old pool
// answers what it holds and is kept until the store closes.
void Client::use_master(const Endpoint& master) {
  master_stale_ = false;
  if (!master_ || *master_ != master || pool_.empty()) {
    for (auto& c : pool_) retired_.push_back(std::move(c));
    pool_.clear();
    master_ = master;
    for (std::size_t i = 0; i < kPoolSize; ++i) {
      pool_.push_back(std::make_unique<Connection>(io_, master, master_config_, op_timeout_, *this, tls_));
    }
  }
  dispatch_parked();
}

// ---- deadlines ----------------------------------------------------------------------------

void Client::arm_deadline() {
  if (deadline_armed_ || deadlines_.empty() || stopped_) return;
  deadline_armed_ = true;
  deadline_timer_.expires_at(deadlines_.front()->deadline);
  deadline_timer_.async_wait([this](boost::system::error_code ec) {
    deadline_armed_ = false;
    if (ec || stopped_) return;
    expire();
  });
}

void Client::expire() {
  const auto now = SteadyClock::now();
  std::vector<CallPtr> expired;
  while (!deadlines_.empty() && (deadlines_.front()->done || deadlines_.front()->deadline <= now)) {
    // A call waiting for its replicas is answered by its WAIT, whose deadline is the same.
    if (!deadlines_.front()->done && !deadlines_.front()->awaiting_replicas) {
      expired.push_back(std::move(deadlines_.front()));
    }
    deadlines_.pop_front();
  }
  for (CallPtr& c : expired) {
    if (c->sent) {
      finish(*c, deadline_exceeded(description_ + ": no answer within op_timeout (" + millis(op_timeout_) +
                                   "); the outcome is unknown"));
    } else {
      finish(*c, unavailable(description_ + ": not sent within op_timeout (" + millis(op_timeout_) +
                             "); nothing was applied" + (last_error_.empty() ? "" : ": " + last_error_)));
    }
  }
  arm_deadline();
}

}  // namespace idem::redis
