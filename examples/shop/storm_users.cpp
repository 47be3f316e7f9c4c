#include "storm_users.h"

#include <algorithm>
#include <cstring>

#include <boost/json.hpp>

#include "callback_sign.h"

namespace shop::storm {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr Millis kClientTimeout{150};  // the "timeout" fault: shorter than the shop's slow path

int uniform(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

bool is_retry_problem(const std::string& type) {
  // The gateway's "come back later" answers, and the shop's fenced zombie (a newer holder
  // ran: a retry gets its result).
  for (const char* name : {"in-progress", "locked", "fenced"})
    if (type.size() >= std::strlen(name) &&
        type.compare(type.size() - std::strlen(name), std::string::npos, name) == 0)
      return true;
  return false;
}

// 2xx, or a 4xx that is not "try again".
bool definitive(const Reply& r) {
  if (r.status >= 200 && r.status < 300) return true;
  if (r.status == 408 || r.status == 425 || r.status == 429) return false;
  if (r.status == 409 && is_retry_problem(r.problem_type)) return false;
  return r.status >= 400 && r.status < 500;
}

Millis backoff(UserRun& u) { return Millis(uniform(u.rng, 50, 300)); }

// One sender of a submission: sends until a definitive answer (recorded) or the budget ends.
awaitable<void> submit(Run& run, UserRun* u, Submission* sub, std::string kind, Outgoing out,
                       Millis first_deadline) {
  const auto until = Clock::now() + run.budget;
  const Millis normal = out.deadline;
  out.deadline = first_deadline;
  for (;;) {
    ++run.tally.sent[kind];
    const Reply r = co_await send(run.ports.gateway, out);
    out.deadline = normal;
    if (r.replayed) ++run.tally.replayed[kind];
    if (r.timed_out) ++run.tally.timeouts[kind];
    if (definitive(r)) {
      sub->answers.push_back(Answer{r.status, r.body, r.replayed, r.problem_type});
      co_return;
    }
    if (r.status == 409) ++run.tally.in_progress[kind];
    if (Clock::now() >= until) {
      ++sub->gave_up;
      u->problems.push_back(kind + " " + sub->id + ": no definitive answer within the budget (last: " +
                            (r.status ? std::to_string(r.status) + " " + r.problem_type : r.error) + ")");
      co_return;
    }
    const Millis wait = backoff(*u);
    co_await pause(wait);
  }
}

awaitable<std::string> fetch_token(Run& run, UserRun& u) {
  Outgoing out;
  out.target = "/_idem/tokens";
  out.headers = {{"X-User-Id", u.user}};
  const auto until = Clock::now() + run.budget;
  for (;;) {
    ++run.tally.sent["token"];
    const Reply r = co_await send(run.ports.gateway, out);
    if (r.status == 201) {
      boost::system::error_code ec;
      auto v = json::parse(r.body, ec);
      if (!ec && v.is_object())
        if (auto* t = v.as_object().if_contains("token"); t && t->is_string())
          co_return std::string(t->as_string());
    }
    if (r.status != 0 && r.status < 500) {
      u.problems.push_back("token: " + std::to_string(r.status) + " " + r.body);
      co_return std::string();
    }
    if (Clock::now() >= until) {
      u.problems.push_back("token: the gateway did not issue one within the budget (" + r.error + ")");
      co_return std::string();
    }
    const Millis wait = backoff(u);
    co_await pause(wait);
  }
}

std::string signed_callback(const Run& run, const UserRun& u, bool forged) {
  // Sorted by name: out_trade_no, total_amount, trade_no, trade_status.
  const std::string fields = "out_trade_no=" + u.order_no + "&total_amount=" + std::to_string(u.amount) +
                             "&trade_no=T" + u.order_no + "&trade_status=TRADE_SUCCESS";
  const std::string key = forged ? run.secret + "-forged" : run.secret;
  return fields + "&sign=" + callback_signature(key, fields);
}

// One copy of the payment platform's callback: after `delay`, sent until `success`.
awaitable<void> callback_copy(Run& run, UserRun* u, Millis delay, Outgoing out) {
  co_await pause(delay);
  const auto until = Clock::now() + run.budget;
  for (;;) {
    ++run.tally.sent["callback"];
    const Reply r = co_await send(run.ports.gateway, out);
    if (r.status == 200 && r.body == "success") {
      u->paid = true;
      co_return;
    }
    if (r.status == 400 || r.status == 409) {  // refused for good: a bug for a well-signed copy
      u->problems.push_back("callback refused: " + std::to_string(r.status) + " " + r.body);
      co_return;
    }
    if (Clock::now() >= until) {
      u->problems.push_back("callback: no success within the budget (last: " +
                            (r.status ? std::to_string(r.status) + " " + r.body : r.error) + ")");
      co_return;
    }
    const Millis wait = backoff(*u);
    co_await pause(wait);
  }
}

awaitable<void> forged_callback(Run& run, UserRun* u, Outgoing out) {
  const auto until = Clock::now() + run.budget;
  for (;;) {
    ++run.tally.sent["forged-callback"];
    const Reply r = co_await send(run.ports.gateway, out);
    if ((r.status != 0 && r.status < 500) || Clock::now() >= until) {
      u->forged_status = r.status;
      co_return;
    }
    const Millis wait = backoff(*u);
    co_await pause(wait);
  }
}

awaitable<void> place_order(Run& run, UserRun& u) {
  const int devices = u.order_fault == "two-devices" ? 2 : 1;
  for (int d = 0; d < devices; ++d) {
    std::string token = co_await fetch_token(run, u);
    if (token.empty()) co_return;
    u.orders.push_back(Submission{token, {}, 0});
  }
  json::object body{{"user_id", u.user}, {"sku_id", u.sku}, {"event_id", u.event}, {"quantity", u.quantity}};
  Outgoing out;
  out.target = "/orders";
  out.body = json::serialize(body);
  if (u.order_fault != "plain") ++run.tally.faults["order " + u.order_fault];
  Group clicks(run.ioc);
  const int senders = u.order_fault == "double-click" ? 2 : u.order_fault == "triple-click" ? 3 : 1;
  const Millis first = u.order_fault == "timeout" ? kClientTimeout : out.deadline;
  for (auto& sub : u.orders) {
    out.headers = {
        {"Content-Type", "application/json"}, {"X-User-Id", u.user}, {"Idempotency-Token", sub.id}};
    for (int s = 0; s < senders; ++s) clicks.spawn(submit(run, &u, &sub, "order", out, first));
  }
  co_await clicks.wait();
  for (const auto& sub : u.orders)
    for (const auto& a : sub.answers) {
      if (a.status < 200 || a.status >= 300 || !u.order_no.empty()) continue;
      boost::system::error_code ec;
      auto v = json::parse(a.body, ec);
      if (ec || !v.is_object()) continue;
      const auto& o = v.as_object();
      if (auto* n = o.if_contains("order_no"); n && n->is_string()) u.order_no = std::string(n->as_string());
      if (auto* m = o.if_contains("amount"); m && m->is_int64()) u.amount = m->as_int64();
      if (auto* i = o.if_contains("order_id"); i && i->is_int64()) u.order_id = i->as_int64();
      if (auto* b = o.if_contains("biz_no"); b && b->is_string()) u.biz_no = std::string(b->as_string());
    }
  if (u.order_no.empty() && u.problems.empty()) u.problems.push_back("order: no answer named an order");
}

awaitable<void> deduct_stock(Run& run, UserRun& u) {
  u.deduct.id = u.order_no;
  json::object body{{"order_no", u.order_no}, {"quantity", u.quantity}};
  Outgoing out;
  out.target = "/skus/" + u.sku + "/deduct";
  out.body = json::serialize(body);
  out.headers = {{"Content-Type", "application/json"}, {"X-User-Id", u.user}};
  if (u.deduct_fault != "plain") ++run.tally.faults["deduct " + u.deduct_fault];
  Group sends(run.ioc);
  const int senders = u.deduct_fault == "double-send" ? 2 : 1;
  const Millis first = u.deduct_fault == "timeout" ? kClientTimeout : out.deadline;
  for (int s = 0; s < senders; ++s) sends.spawn(submit(run, &u, &u.deduct, "deduct", out, first));
  co_await sends.wait();
  for (const auto& a : u.deduct.answers) {
    if (a.status == 200) u.deducted = true;
    if (a.status == 409 && a.problem_type == "urn:shop:problem:out-of-stock") u.sold_out = true;
  }
  if (!u.deducted && !u.sold_out && u.problems.empty())
    u.problems.push_back("deduct: neither deducted nor out of stock");
}

// The JSON notification as a Java platform writes it: out_trade_no a JSON number (the
// 19-digit order_id, every digit) or the business number 订单...; notify_id differs per
// copy, so the copies of one payment are not byte-identical (the route fingerprints the
// payment's fields, not the body). Signed over the body, in X-Pay-Signature.
Outgoing notify_request(const Run& run, const UserRun& u, int copy) {
  json::object body;
  if (u.pay_via == "notify-id")
    body["out_trade_no"] = u.order_id;
  else
    body["out_trade_no"] = u.biz_no;
  body["trade_no"] = "N" + u.order_no;
  body["total_amount"] = u.amount;
  body["trade_status"] = "TRADE_SUCCESS";
  body["notify_id"] = u.user + "-" + std::to_string(copy);
  Outgoing out;
  out.target = "/pay/notify";
  out.body = json::serialize(body);
  out.headers = {{"Content-Type", "application/json"},
                 {"X-Pay-Signature", callback_signature(run.secret, out.body)}};
  return out;
}

// One copy of the JSON notification: after `delay`, sent until a definitive answer, which
// is recorded (the checks read it: it must be SUCCESS for this very order).
awaitable<void> notify_copy(Run& run, UserRun* u, Millis delay, Outgoing out) {
  co_await pause(delay);
  const Millis first = out.deadline;
  std::string kind = "notify";
  co_await submit(run, u, &u->notify, std::move(kind), std::move(out), first);
}

awaitable<void> notify(Run& run, UserRun& u) {
  u.notify.id = u.pay_via == "notify-id" ? std::to_string(u.order_id) : u.biz_no;
  run.tally.faults["notify re-sends"] += u.callbacks - 1;
  Group platform(run.ioc);
  for (int sent = 0; sent < u.callbacks;) {
    const int burst = std::min(u.callbacks - sent, uniform(u.rng, 1, 4));
    const Millis delay(uniform(u.rng, 0, 1500));
    for (int i = 0; i < burst; ++i)
      platform.spawn(notify_copy(run, &u, delay, notify_request(run, u, sent + i)));
    sent += burst;
  }
  co_await platform.wait();
  for (const auto& a : u.notify.answers)
    if (notify_names_order(u, a)) u.paid = true;
}

awaitable<void> pay(Run& run, UserRun& u) {
  ++run.tally.pay_via[u.pay_via];
  if (u.pay_via != "callback") {
    co_await notify(run, u);
    co_return;
  }
  Outgoing out;
  out.target = "/pay/callback";
  out.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
  out.body = signed_callback(run, u, false);
  run.tally.faults["callback re-sends"] += u.callbacks - 1;
  if (u.forge) ++run.tally.faults["forged callback"];
  Group platform(run.ioc);
  // Copies in bursts of 1-4 that share a delay: a burst arrives concurrently.
  for (int sent = 0; sent < u.callbacks;) {
    const int burst = std::min(u.callbacks - sent, uniform(u.rng, 1, 4));
    const Millis delay(uniform(u.rng, 0, 1500));
    for (int i = 0; i < burst; ++i) platform.spawn(callback_copy(run, &u, delay, out));
    sent += burst;
  }
  if (u.forge) {
    Outgoing forged = out;
    forged.body = signed_callback(run, u, true);
    platform.spawn(forged_callback(run, &u, forged));
  }
  co_await platform.wait();
}

awaitable<void> user_flow(Run& run, UserRun& u) {
  co_await place_order(run, u);
  if (u.order_no.empty() || u.amount < 0) co_return;
  co_await deduct_stock(run, u);
  if (!u.deducted) co_return;
  co_await pay(run, u);
}

awaitable<void> worker(Run& run) {
  while (run.next < run.users.size()) {
    UserRun& u = run.users[run.next++];
    co_await user_flow(run, u);
    ++run.done;
    if (run.on_user_done) run.on_user_done();
  }
}

}  // namespace

bool notify_names_order(const UserRun& u, const Answer& a) {
  if (a.status != 200) return false;
  boost::system::error_code ec;
  const json::value v = json::parse(a.body, ec);
  if (ec || !v.is_object()) return false;
  const json::object& o = v.as_object();
  const json::value *code = o.if_contains("code"), *no = o.if_contains("order_no"),
                    *ref = o.if_contains("out_trade_no");
  const bool same_ref = u.pay_via == "notify-id" ? ref && ref->is_int64() && ref->as_int64() == u.order_id
                                                 : ref && ref->is_string() && ref->as_string() == u.biz_no;
  return same_ref && code && code->is_string() && code->as_string() == "SUCCESS" && no && no->is_string() &&
         no->as_string() == u.order_no;
}

void plan_users(Run& run, int count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  static const char* order_faults[] = {"plain", "double-click", "triple-click", "two-devices", "timeout"};
  static const char* deduct_faults[] = {"plain", "double-send", "timeout"};
  run.users.resize(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    UserRun& u = run.users[static_cast<std::size_t>(i)];
    u.user = "u" + std::to_string(i + 1);
    u.sku = run.skus[static_cast<std::size_t>(uniform(rng, 0, static_cast<int>(run.skus.size()) - 1))].id;
    u.event = uniform(rng, 0, 1) ? "e2" : "e1";
    u.quantity = uniform(rng, 1, 3);
    u.order_fault = order_faults[uniform(rng, 0, 4)];
    u.deduct_fault = deduct_faults[uniform(rng, 0, 2)];
    u.callbacks = uniform(rng, 1, 20);
    u.forge = uniform(rng, 0, 99) < 5;
    const int path = uniform(rng, 0, 99);
    u.pay_via = path < 40 ? "callback" : path < 75 ? "notify-id" : "notify-biz-no";
    u.rng.seed(rng());
  }
}

awaitable<void> run_users(Run& run, int concurrency) {
  Group workers(run.ioc);
  for (int i = 0; i < concurrency; ++i) workers.spawn(worker(run));
  co_await workers.wait();
}

}  // namespace shop::storm
