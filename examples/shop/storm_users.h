// The storm's users: each fetches a one-time token, submits an order through the gateway
// with an injected client fault (double and triple clicks, two devices, a client timeout),
// deducts the stock (sent twice, or timed out and retried), and plays one of the payment
// platforms, which re-sends its notification 1-20 times: the form callback naming the
// order_no, or the JSON notification through the gateway's pay-notify route naming the
// order's 19-digit order_id or its business number 订单.... Every definitive answer is
// recorded per submission, so the checks can compare them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "storm_http.h"

namespace shop::storm {

struct Ports {
  unsigned short gateway = 0;  // idem serve, client listener
  unsigned short admin = 0;    // idem serve, admin listener
  unsigned short shop = 0;     // the shop itself
};

struct Sku {
  std::string id;
  std::int64_t stock = 0;
  std::int64_t price = 0;
};

// One definitive answer: 2xx or a 4xx that is not "try again".
struct Answer {
  int status = 0;
  std::string body;
  bool replayed = false;
  std::string problem_type;
};

// One submission: an order under one token, or the deduction of one order. Several
// senders (clicks, retries) may answer it.
struct Submission {
  std::string id;
  std::vector<Answer> answers;
  int gave_up = 0;  // senders that ran out of their retry budget without a definitive answer
};

// A user's plan (drawn from the seed before the run) and what happened to it.
struct UserRun {
  // The plan.
  std::string user, sku, event;
  int quantity = 1;
  std::string order_fault;   // plain | double-click | triple-click | two-devices | timeout
  std::string deduct_fault;  // plain | double-send | timeout
  std::string pay_via;       // callback | notify-id | notify-biz-no
  int callbacks = 1;         // copies the payment platform sends
  bool forge = false;        // also send one callback with a bad signature
  std::mt19937_64 rng;       // backoffs and delays

  // What happened.
  std::vector<Submission> orders;  // one per token
  Submission deduct;
  std::string order_no;  // from the first 2xx order answer, with the order's other names
  std::int64_t order_id = -1;
  std::string biz_no;
  std::int64_t amount = -1;
  Submission notify;  // the JSON notifications (pay_via notify-*): every copy's answer
  bool deducted = false, sold_out = false, paid = false;
  int forged_status = -1;             // the forged callback's answer (-1: not sent)
  std::vector<std::string> problems;  // a step that got no definitive answer, or a wrong one
};

struct Tally {
  std::map<std::string, long> sent;         // requests by kind, retries included
  std::map<std::string, long> replayed;     // answers with Idempotent-Replayed: true, by kind
  std::map<std::string, long> in_progress;  // 409 in-progress/locked answers, by kind
  std::map<std::string, long> timeouts;     // client deadlines that fired, by kind
  std::map<std::string, long> faults;       // faults injected, by kind
  std::map<std::string, long> pay_via;      // paying users, by payment path
};

// Everything the user coroutines share. One io_context thread: no locks.
struct Run {
  explicit Run(asio::io_context& context) : ioc(context) {}
  asio::io_context& ioc;
  Ports ports;
  std::vector<Sku> skus;
  std::vector<UserRun> users;
  Tally tally;
  std::string secret = "shop-demo-secret";
  Millis budget{30000};  // per sender: how long it keeps retrying
  std::size_t next = 0, done = 0;
  std::function<void()> on_user_done;  // after each user: the storm injects faults by progress
};

// True when `a`, an answer to one of u's JSON notifications, is 200 SUCCESS for u's own
// order: its out_trade_no as u sent it (every digit of order_id, or biz_no) and its order_no.
bool notify_names_order(const UserRun& u, const Answer& a);

// Draws every user's plan from `seed`.
void plan_users(Run& run, int count, std::uint64_t seed);

// Runs every user, `concurrency` at a time; returns when all are done.
awaitable<void> run_users(Run& run, int concurrency);

}  // namespace shop::storm
