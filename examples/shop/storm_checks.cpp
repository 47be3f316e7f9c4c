#include "storm_checks.h"

#include <map>
#include <set>

#include <boost/json.hpp>

namespace shop::storm {

namespace {

struct Order {
  std::string user, sku, event, status;
  std::int64_t quantity = 0, amount = 0;
};

std::map<std::string, Order> read_orders(Db& db) {
  std::map<std::string, Order> orders;
  for (const auto& r :
       db.query("SELECT order_no, user_id, sku_id, event_id, quantity, amount, status FROM t_order"))
    orders[r.text(0)] = Order{r.text(1), r.text(2), r.text(3), r.text(6), r.integer(4), r.integer(5)};
  return orders;
}

std::map<std::string, std::int64_t> count_by(Db& db, const char* sql) {
  std::map<std::string, std::int64_t> out;
  for (const auto& r : db.query(sql)) out[r.text(0)] = r.integer(1);
  return out;
}

std::string order_no_of(const Answer& a) {
  boost::system::error_code ec;
  auto v = boost::json::parse(a.body, ec);
  if (ec || !v.is_object()) return {};
  const auto* n = v.as_object().if_contains("order_no");
  return n && n->is_string() ? std::string(n->as_string()) : std::string();
}

std::string brief(const Answer& a) {
  std::string body = a.body.size() > 160 ? a.body.substr(0, 160) + "..." : a.body;
  return std::to_string(a.status) + (a.replayed ? " (replayed) " : " ") + body;
}

// (1) one order per (user, sku, event); every answer a user got names the same order.
Check one_order(const std::map<std::string, Order>& orders, const Run& run) {
  Check c{"1 one order per (user, sku, event); every answer names it", 0, {}};
  std::map<std::string, std::vector<std::string>> by_key;
  for (const auto& [no, o] : orders) by_key[o.user + "/" + o.sku + "/" + o.event].push_back(no);
  for (const auto& [key, nos] : by_key) {
    ++c.checked;
    if (nos.size() > 1) c.failures.push_back(key + ": " + std::to_string(nos.size()) + " orders");
  }
  for (const auto& u : run.users) {
    std::set<std::string> named;
    for (const auto& sub : u.orders)
      for (const auto& a : sub.answers)
        if (a.status >= 200 && a.status < 300) named.insert(order_no_of(a));
    if (named.size() > 1) {
      std::string list;
      for (const auto& n : named) list += " " + (n.empty() ? "(none)" : n);
      c.failures.push_back(u.user + ": answers name " + std::to_string(named.size()) + " orders:" + list);
    }
    const auto it = orders.find(u.order_no);
    if (!u.order_no.empty() && (it == orders.end() || it->second.user != u.user))
      c.failures.push_back(u.user + ": answered order " + u.order_no + " is not the user's in t_order");
  }
  return c;
}

// (2) exactly one charge per PAID order, none for the others.
Check one_charge(Db& db, const std::map<std::string, Order>& orders) {
  Check c{"2 exactly one t_charge row per PAID order, none for others", 0, {}};
  auto charges = count_by(db, "SELECT order_no, COUNT(*) FROM t_charge GROUP BY order_no");
  for (const auto& [no, o] : orders) {
    ++c.checked;
    const std::int64_t n = charges.count(no) ? charges[no] : 0;
    if ((o.status == "PAID" && n != 1) || (o.status != "PAID" && n != 0))
      c.failures.push_back(no + " (" + o.status + "): " + std::to_string(n) + " charges");
    charges.erase(no);
  }
  for (const auto& [no, n] : charges)
    c.failures.push_back(no + ": " + std::to_string(n) + " charges, no such order");
  return c;
}

// (3) one t_points row per paid order; balances = sum of amount/100 of paid orders.
Check points_once(Db& db, const std::map<std::string, Order>& orders) {
  Check c{"3 one t_points row per paid order; balances = paid amount/100", 0, {}};
  auto points = count_by(db, "SELECT order_no, points FROM t_points");
  auto balances = count_by(db, "SELECT user_id, balance FROM t_user_points");
  std::map<std::string, std::int64_t> expected;
  for (const auto& [no, o] : orders) {
    ++c.checked;
    const bool has = points.count(no) > 0;
    if (o.status == "PAID") {
      expected[o.user] += o.amount / 100;
      if (!has)
        c.failures.push_back(no + " (PAID): no t_points row");
      else if (points[no] != o.amount / 100)
        c.failures.push_back(no + ": " + std::to_string(points[no]) + " points, expected " +
                             std::to_string(o.amount / 100));
    } else if (has) {
      c.failures.push_back(no + " (" + o.status + "): has a t_points row");
    }
  }
  for (const auto& [user, want] : expected) {
    ++c.checked;
    const std::int64_t got = balances.count(user) ? balances[user] : 0;
    if (got != want)
      c.failures.push_back(user + ": balance " + std::to_string(got) + ", expected " + std::to_string(want));
    balances.erase(user);
  }
  for (const auto& [user, got] : balances)
    if (got != 0) c.failures.push_back(user + ": balance " + std::to_string(got) + " without a paid order");
  return c;
}

// (4) stock = initial - paid quantities, never negative; one stock log row per order.
Check stock_exact(Db& db, const std::map<std::string, Order>& orders) {
  Check c{"4 stock = initial - paid quantities, >= 0; one t_stock_log row per order", 0, {}};
  std::map<std::string, std::int64_t> paid;
  for (const auto& [no, o] : orders)
    if (o.status == "PAID") paid[o.sku] += o.quantity;
  for (const auto& r : db.query("SELECT sku_id, stock, initial_stock FROM t_sku ORDER BY sku_id")) {
    ++c.checked;
    const std::int64_t stock = r.integer(1), initial = r.integer(2), sold = paid[r.text(0)];
    if (stock != initial - sold || stock < 0)
      c.failures.push_back(r.text(0) + ": stock " + std::to_string(stock) + ", initial " +
                           std::to_string(initial) + " - paid " + std::to_string(sold) + " = " +
                           std::to_string(initial - sold));
  }
  for (const auto& [no, n] : count_by(db, "SELECT order_no, COUNT(*) FROM t_stock_log GROUP BY order_no")) {
    ++c.checked;
    if (n > 1)
      c.failures.push_back(no + ": " + std::to_string(n) + " t_stock_log rows (deducted " +
                           std::to_string(n) + " times)");
  }
  return c;
}

// (5) a submission answered more than once got the same answer each time.
Check same_answers(const Run& run) {
  Check c{"5 repeated answers to one submission are identical", 0, {}};
  auto compare = [&](const UserRun& u, const char* kind, const Submission& sub) {
    if (sub.answers.size() < 2) return;
    ++c.checked;
    const Answer& first = sub.answers.front();
    for (const auto& a : sub.answers) {
      // 2xx answers are replays: byte-identical. A 4xx is not stored by the gateway (409
      // out-of-stock runs again), so only its status and problem type must agree.
      const bool same = a.status == first.status &&
                        (first.status >= 300 ? a.problem_type == first.problem_type : a.body == first.body);
      if (!same) {
        c.failures.push_back(u.user + " " + kind + " " + sub.id + ": " + brief(first) + "  vs  " + brief(a));
        return;
      }
    }
  };
  for (const auto& u : run.users) {
    for (const auto& sub : u.orders) compare(u, "order", sub);
    compare(u, "deduct", u.deduct);
    compare(u, "notify", u.notify);
  }
  return c;
}

// (6) every forged callback refused with 400.
Check forged_refused(const Run& run) {
  Check c{"6 every forged callback refused (400)", 0, {}};
  for (const auto& u : run.users) {
    if (u.forged_status < 0) continue;
    ++c.checked;
    if (u.forged_status != 400)
      c.failures.push_back(u.user + ": forged callback got " + std::to_string(u.forged_status));
  }
  return c;
}

// (7) every user got a definitive answer at every step it took.
Check all_answered(const Run& run) {
  Check c{"7 every user got a definitive answer", 0, {}};
  for (const auto& u : run.users) {
    ++c.checked;
    for (const auto& p : u.problems) c.failures.push_back(u.user + ": " + p);
  }
  return c;
}

// (9) and (10) the JSON notifications through the gateway's pay-notify route, by what
// out_trade_no held: every answer is SUCCESS for the user's own order (not a 4xx such as
// 400 key-invalid or 422 key-reused, not another order's replayed answer), and the order
// is PAID with one charge. A payment whose key the gateway merged with another's, or
// refused, never reaches the shop.
Check notified(std::string name, const char* via, const Run& run, const std::map<std::string, Order>& orders,
               const std::map<std::string, std::int64_t>& charges) {
  Check c{std::move(name), 0, {}};
  for (const auto& u : run.users) {
    if (u.pay_via != via || !u.deducted) continue;
    ++c.checked;
    std::string what;
    long wrong = 0;
    const Answer* example = nullptr;
    for (const auto& a : u.notify.answers) {
      if (notify_names_order(u, a)) continue;
      ++wrong;
      if (!example) example = &a;
    }
    if (example)
      what = std::to_string(wrong) + " of " + std::to_string(u.notify.answers.size()) +
             " answers not SUCCESS for its order, e.g. " + brief(*example);
    const auto order = orders.find(u.order_no);
    const std::string status = order == orders.end() ? "missing" : order->second.status;
    const auto charged = charges.find(u.order_no);
    const std::int64_t n = charged == charges.end() ? 0 : charged->second;
    if (status != "PAID" || n != 1)
      what += (what.empty() ? "" : "; ") + ("order " + status + " with " + std::to_string(n) + " charges");
    if (!what.empty())
      c.failures.push_back(u.user + " (" + u.notify.id + ", order " + u.order_no + "): " + what);
  }
  return c;
}

}  // namespace

std::vector<Check> run_checks(Db& db, const Run& run) {
  const auto orders = read_orders(db);
  std::vector<Check> checks;
  checks.push_back(one_order(orders, run));
  checks.push_back(one_charge(db, orders));
  checks.push_back(points_once(db, orders));
  checks.push_back(stock_exact(db, orders));
  checks.push_back(same_answers(run));
  checks.push_back(forged_refused(run));
  checks.push_back(all_answered(run));
  const auto charges = count_by(db, "SELECT order_no, COUNT(*) FROM t_charge GROUP BY order_no");
  checks.push_back(notified("9 notifications by 19-digit order_id (a JSON number) paid their own order once",
                            "notify-id", run, orders, charges));
  checks.push_back(notified("10 notifications by business number 订单... paid their own order once, no 4xx",
                            "notify-biz-no", run, orders, charges));
  return checks;
}

long print_checks(std::ostream& out, const std::vector<Check>& checks) {
  long violations = 0;
  for (const auto& c : checks) {
    violations += static_cast<long>(c.failures.size());
    out << "  check " << c.name << ": " << (c.failures.empty() ? "ok" : "FAILED") << " (" << c.checked
        << " checked, " << c.failures.size() << " failing)\n";
    for (std::size_t i = 0; i < c.failures.size() && i < 10; ++i) out << "      " << c.failures[i] << "\n";
    if (c.failures.size() > 10) out << "      ... and " << c.failures.size() - 10 << " more\n";
  }
  return violations;
}

std::vector<std::pair<std::string, std::int64_t>> read_stats(Db& db) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& r : db.query("SELECT name, n FROM t_stats ORDER BY name"))
    out.emplace_back(r.text(0), r.integer(1));
  return out;
}

OrderCounts count_orders(Db& db, const Run& run) {
  OrderCounts n;
  for (const auto& [no, o] : read_orders(db)) {
    ++n.orders;
    if (o.status == "PAID")
      ++n.paid;
    else if (o.status == "CREATED")
      ++n.created;
  }
  for (const auto& u : run.users) {
    if (u.sold_out) ++n.sold_out;
    if (u.order_no.empty()) ++n.without_order;
  }
  return n;
}

}  // namespace shop::storm
