// POST /pay/notify: a second payment platform's notification, JSON as a Java platform
// writes it. Its out_trade_no is the order's order_id, a 19-digit number (a Java Long,
// which Jackson writes as a JSON number), or the order's business number biz_no, a string
// such as 订单202401010000000042. Unlike POST /pay/callback there is no Guard in the shop:
// the gateway's route pay-notify (idem.yaml, key "pay:{json.out_trade_no}") answers every
// repeat with the first answer, and the conditional update WHERE status = 'CREATED'
// charges nothing on a re-run. So two payments stay two only if the gateway keeps every
// digit and every character of out_trade_no in the key (docs/gateway.md, "Numbers" and
// "Keys built from the request"); the storm checks that it does.
#include <optional>
#include <string>
#include <variant>

#include <boost/json.hpp>

#include "callback_sign.h"
#include "shop_payment.h"
#include "shop_service.h"

namespace json = boost::json;

namespace shop {
namespace {

Reply notify_reply(unsigned status, const json::object& o) {
  return Reply{status, "application/json", json::serialize(o), {}};
}

Reply notify_fail(unsigned status, std::string message) {
  return notify_reply(status, {{"code", "FAIL"}, {"message", std::move(message)}});
}

// What out_trade_no names: an order_id (a positive integer) or a biz_no (text).
using OrderRef = std::variant<std::int64_t, std::string>;

std::optional<OrderRef> order_ref(const json::value* v) {
  if (v && v->is_int64() && v->as_int64() > 0) return OrderRef(v->as_int64());
  if (v && v->is_string() && !v->as_string().empty() && v->as_string().size() <= 128)
    return OrderRef(std::string(v->as_string()));
  return std::nullopt;
}

const json::string* text_field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v && v->is_string() && !v->as_string().empty() ? &v->as_string() : nullptr;
}

}  // namespace

Reply Shop::pay_notify(const Request& req) {
  if (!req.pay_signature || !callback_signature_ok(options_.secret, req.body, *req.pay_signature)) {
    auto lease = pool_.acquire();
    transaction(*lease, [](Db& db) { count(db, "notify.bad_sign"); });
    return notify_fail(400, "bad signature");
  }
  boost::system::error_code ec;
  const json::value body = json::parse(req.body, ec);
  if (ec || !body.is_object()) return notify_fail(400, "the body is not a JSON object");
  const json::object& o = body.as_object();
  const std::optional<OrderRef> ref = order_ref(o.if_contains("out_trade_no"));
  const json::string *trade_no = text_field(o, "trade_no"), *status = text_field(o, "trade_status");
  const json::value* amount = o.if_contains("total_amount");
  if (!ref || !trade_no || !status || !amount || !amount->is_int64() || amount->as_int64() < 0)
    return notify_fail(400, "out_trade_no, trade_no, total_amount (cents) and trade_status are required");
  // The answer names the order as the platform did, and as the shop knows it.
  json::object ok{{"code", "SUCCESS"}, {"out_trade_no", o.at("out_trade_no")}};
  // Other states (WAIT_BUYER_PAY, TRADE_CLOSED) are acknowledged and change nothing.
  if (*status != "TRADE_SUCCESS") return notify_reply(200, ok);

  Notification n;
  n.trade_no = std::string(*trade_no);
  n.amount = amount->as_int64();
  Payment p;
  {
    auto lease = pool_.acquire();
    p = transaction(*lease, [&](Db& db) {
      auto rows =
          std::holds_alternative<std::int64_t>(*ref)
              ? db.query("SELECT order_no FROM t_order WHERE order_id = $1", {std::get<std::int64_t>(*ref)})
              : db.query("SELECT order_no FROM t_order WHERE biz_no = $1", {std::get<std::string>(*ref)});
      if (rows.empty()) return Payment::unknown_order;
      n.order_no = rows[0].text(0);
      return record_payment(db, n, "notify");
    });
  }
  if (p == Payment::paid && on_paid_) on_paid_();
  if (p == Payment::unknown_order) return notify_fail(404, "unknown order");
  if (p == Payment::wrong_amount) return notify_fail(400, "total_amount differs from the order's amount");
  // paid or already paid (a re-run): the same answer, so a replay and a re-run agree.
  ok["order_no"] = n.order_no;
  return notify_reply(200, ok);
}

}  // namespace shop
