// Orders and stock: the database unique key absorbs a second submission of one purchase,
// the fence check a re-run deduction, the optimistic version concurrent deductions.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>

#include <boost/json.hpp>

#include "shop_service.h"

namespace json = boost::json;

namespace shop {
namespace {

// Why a request body is refused, for the 400's detail.
struct BadRequest {
  std::string detail;
};

json::object parse_object(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) throw BadRequest{"the body is not a JSON object"};
  return std::move(v.as_object());
}

std::string text_field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  if (!v || !v->is_string() || v->as_string().empty() || v->as_string().size() > 128) {
    throw BadRequest{"\"" + std::string(name) + "\" must be a string of 1 to 128 characters"};
  }
  return std::string(v->as_string());
}

std::int64_t quantity_field(const json::object& o) {
  const json::value* v = o.if_contains("quantity");
  std::int64_t q = 0;
  if (v && v->is_int64()) q = v->as_int64();
  if (v && v->is_uint64() && v->as_uint64() <= 100) q = static_cast<std::int64_t>(v->as_uint64());
  if (q < 1 || q > 100) throw BadRequest{"\"quantity\" must be an integer from 1 to 100"};
  return q;
}

Reply json_reply(unsigned status, const json::object& o) {
  return Reply{status, "application/json", json::serialize(o), {}};
}

constexpr const char* kOrderColumns =
    "SELECT order_no, user_id, sku_id, event_id, quantity, amount, status, order_id, biz_no FROM t_order ";

json::object order_json(const Row& r) {
  return {{"order_no", r.text(0)},    {"order_id", r.integer(7)}, {"biz_no", r.text(8)},
          {"user_id", r.text(1)},     {"sku_id", r.text(2)},      {"event_id", r.text(3)},
          {"quantity", r.integer(4)}, {"amount", r.integer(5)},   {"status", r.text(6)}};
}

// Order ids are Snowflake-sized, 19 digits, as a Java shop's id generator hands them out (a
// Java Long, written by Jackson as a JSON number), and consecutive: neighbouring orders
// differ in the last digits only, which a double cannot hold (docs/gateway.md, "Numbers").
constexpr std::int64_t kFirstOrderId = 1790000000000000001;

// The next id, in the caller's transaction: the counter's row stays locked until it ends.
std::int64_t next_order_id(Db& db) {
  if (db.dialect() == Db::Dialect::mysql) {
    // No RETURNING: LAST_INSERT_ID(expr) keeps the number for this session (the first
    // insert sets it in VALUES, every later one in the update), and SELECT reads it back.
    db.exec(
        "INSERT INTO t_sequence (name, n) VALUES ('order_id', LAST_INSERT_ID($1)) "
        "ON DUPLICATE KEY UPDATE n = LAST_INSERT_ID(n + 1)",
        {kFirstOrderId});
    return db.query("SELECT LAST_INSERT_ID()").at(0).integer(0);
  }
  auto rows = db.query(
      "INSERT INTO t_sequence (name, n) VALUES ('order_id', $1) "
      "ON CONFLICT (name) DO UPDATE SET n = t_sequence.n + 1 RETURNING n",
      {kFirstOrderId});
  return rows.at(0).integer(0);
}

// The business number the shop's Chinese channel prints: 订单, the day (UTC) and the last
// ten digits of the id, e.g. 订单202401010000000042. Unique while the ids are.
std::string biz_no_of(std::int64_t order_id, std::int64_t now_us) {
  const std::time_t t = static_cast<std::time_t>(now_us / 1000000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char digits[64];
  std::snprintf(digits, sizeof digits, "%04d%02d%02d%010lld", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                static_cast<long long>(order_id % 10000000000));
  return std::string("订单") + digits;
}

std::optional<std::uint64_t> parse_fence(const std::string& s) {
  std::uint64_t f = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), f);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return f;
}

}  // namespace

Reply Shop::create_order(const Request& req) {
  std::string user, sku, event;
  std::int64_t quantity = 0;
  try {
    json::object o = parse_object(req.body);
    user = text_field(o, "user_id");
    sku = text_field(o, "sku_id");
    event = text_field(o, "event_id");
    quantity = quantity_field(o);
  } catch (const BadRequest& e) {
    return problem(400, "bad-request", e.detail);
  }
  std::optional<DbPool::Lease> lease(pool_.acquire());
  Reply reply = transaction(**lease, [&](Db& db) -> Reply {
    auto price = db.query("SELECT price FROM t_sku WHERE sku_id = $1", {sku});
    if (price.empty()) return problem(404, "unknown-sku", "no SKU " + sku);
    // DO NOTHING, not a caught unique violation: on PostgreSQL an error aborts the whole
    // transaction, and the existing order must still be read in it.
    // A repeat that the unique key refuses still takes an id: ids may have gaps.
    const std::string order_no = random_id(20);
    const std::int64_t order_id = next_order_id(db), now = now_micros();
    // MySQL's ON DUPLICATE KEY UPDATE answers any unique key, not just this one: a
    // collision on another (order_no, order_id, biz_no) is not found below and fails.
    const bool inserted =
        db.exec(by_dialect(
                    db,
                    "INSERT INTO t_order (order_no, order_id, biz_no, user_id, sku_id, event_id, quantity, "
                    "amount, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'CREATED', $9) "
                    "ON CONFLICT (user_id, sku_id, event_id) DO NOTHING",
                    "INSERT INTO t_order (order_no, order_id, biz_no, user_id, sku_id, event_id, quantity, "
                    "amount, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'CREATED', $9) "
                    "ON DUPLICATE KEY UPDATE order_no = order_no"),
                {order_no, order_id, biz_no_of(order_id, now), user, sku, event, quantity,
                 price[0].integer(0) * quantity, now}) == 1;
    auto rows =
        inserted
            ? db.query(std::string(kOrderColumns) + "WHERE order_no = $1", {order_no})
            : db.query(std::string(kOrderColumns) + "WHERE user_id = $1 AND sku_id = $2 AND event_id = $3",
                       {user, sku, event});
    if (rows.empty()) throw DbError(DbError::Kind::other, "order vanished after its insert");
    if (!inserted) count(db, "orders.unique_key");
    Reply r = json_reply(inserted ? 201 : 200, order_json(rows[0]));
    if (inserted) r.headers.emplace_back("Location", "/orders/" + order_no);
    return r;
  });
  lease.reset();  // hand the connection back before sleeping
  if (reply.status < 300) maybe_slow();
  return reply;
}

Reply Shop::get_order(const std::string& order_no) {
  auto lease = pool_.acquire();
  auto rows = lease->query(std::string(kOrderColumns) + "WHERE order_no = $1", {order_no});
  if (rows.empty()) return problem(404, "unknown-order", "no order " + order_no);
  return json_reply(200, order_json(rows[0]));
}

Reply Shop::get_sku(const std::string& sku_id) {
  auto lease = pool_.acquire();
  auto rows = lease->query("SELECT sku_id, stock, version, price FROM t_sku WHERE sku_id = $1", {sku_id});
  if (rows.empty()) return problem(404, "unknown-sku", "no SKU " + sku_id);
  const Row& r = rows[0];
  return json_reply(
      200,
      {{"sku_id", r.text(0)}, {"stock", r.integer(1)}, {"version", r.integer(2)}, {"price", r.integer(3)}});
}

namespace {

// One deduction as asked: for the gateway's requests also its key and fence.
struct Deduction {
  std::string sku_id, order_no;
  std::int64_t quantity = 0;
  std::optional<std::string> key;  // only with a fence: the fence check applies
  std::int64_t fence = 0;

  Reply done(std::int64_t stock_after) const {
    return json_reply(
        200,
        {{"sku_id", sku_id}, {"order_no", order_no}, {"quantity", quantity}, {"stock_after", stock_after}});
  }
};

// One attempt, in one transaction: the answer, or nullopt when another deduction changed
// the SKU's version between the read and the update.
std::optional<Reply> deduct_once(Db& db, const Deduction& d) {
  auto order = db.query("SELECT sku_id, quantity FROM t_order WHERE order_no = $1", {d.order_no});
  if (order.empty()) return problem(404, "unknown-order", "no order " + d.order_no);
  if (order[0].text(0) != d.sku_id || order[0].integer(1) != d.quantity) {
    return problem(400, "bad-request",
                   "order " + d.order_no + " is not for " + std::to_string(d.quantity) + " x " + d.sku_id);
  }
  if (d.key) {
    auto logged = db.query("SELECT fence, stock_after FROM t_stock_log WHERE idem_key = $1", {*d.key});
    if (!logged.empty() && logged[0].integer(0) > d.fence) {  // we are a zombie
      count(db, "deduct.fenced");
      return problem(409, "fenced",
                     "a newer attempt (fence " + std::to_string(logged[0].integer(0)) + ") ran");
    }
    if (!logged.empty()) {  // an earlier attempt deducted; its answer was lost
      count(db, "deduct.fence_replay");
      return d.done(logged[0].integer(1));
    }
  }
  auto sku = db.query("SELECT stock, version FROM t_sku WHERE sku_id = $1", {d.sku_id});
  if (sku.empty()) return problem(404, "unknown-sku", "no SKU " + d.sku_id);
  const std::int64_t stock = sku[0].integer(0), version = sku[0].integer(1);
  if (stock < d.quantity) return problem(409, "out-of-stock", std::to_string(stock) + " left of " + d.sku_id);
  if (db.exec("UPDATE t_sku SET stock = stock - $1, version = version + 1 WHERE sku_id = $2 AND version = $3",
              {d.quantity, d.sku_id, version}) == 0) {
    count(db, "deduct.version_retry");
    return std::nullopt;
  }
  db.exec(
      "INSERT INTO t_stock_log (id, idem_key, fence, order_no, sku_id, quantity, stock_after, created_at) "
      "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
      {random_id(20), d.key ? Value(*d.key) : Value(), d.key ? Value(d.fence) : Value(), d.order_no, d.sku_id,
       d.quantity, stock - d.quantity, now_micros()});
  return d.done(stock - d.quantity);
}

}  // namespace

Reply Shop::deduct(const std::string& sku_id, const Request& req) {
  Deduction d;
  d.sku_id = sku_id;
  try {
    json::object o = parse_object(req.body);
    d.order_no = text_field(o, "order_no");
    d.quantity = quantity_field(o);
  } catch (const BadRequest& e) {
    return problem(400, "bad-request", e.detail);
  }
  if (req.idempotency_key && req.idempotency_fence) {  // the gateway's requests carry both
    auto f = parse_fence(*req.idempotency_fence);
    if (!f || *f >= (std::uint64_t{1} << 53))
      return problem(400, "bad-request", "malformed Idempotency-Fence");
    d.key = *req.idempotency_key;
    d.fence = static_cast<std::int64_t>(*f);
  }
  std::optional<DbPool::Lease> lease(pool_.acquire());
  for (int i = 0; i < 10; ++i) {
    std::optional<Reply> reply;
    try {
      reply = transaction(**lease, [&](Db& db) { return deduct_once(db, d); });
    } catch (const DbError& e) {
      // Two holders of one key logged at once; the next attempt reads the winner's row.
      if (e.kind() != DbError::Kind::unique_violation || !d.key) throw;
    }
    if (!reply) {
      detail::backoff(i + 3);  // 1-8 ms, then up to 64: the losers spread out
      continue;
    }
    lease.reset();  // hand the connection back before sleeping
    if (reply->status < 300) maybe_slow();
    return std::move(*reply);
  }
  Reply r = problem(503, "contention", "the stock of " + sku_id + " changed 10 times during this deduction");
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

}  // namespace shop
