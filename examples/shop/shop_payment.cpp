#include "shop_payment.h"

#include <boost/json.hpp>

#include "shop_service.h"

namespace shop {

Payment record_payment(Db& db, const Notification& n, std::string_view channel) {
  auto order = db.query("SELECT user_id, amount FROM t_order WHERE order_no = $1", {n.order_no});
  if (order.empty()) return Payment::unknown_order;
  if (order[0].integer(1) != n.amount) return Payment::wrong_amount;
  const std::int64_t now = now_micros();
  if (db.exec("UPDATE t_order SET status = 'PAID', paid_at = $1 WHERE order_no = $2 AND status = 'CREATED'",
              {now, n.order_no}) == 0) {
    count(db, std::string(channel) + ".already_paid");
    return Payment::already_paid;
  }
  db.exec("INSERT INTO t_charge (id, order_no, trade_no, amount, created_at) VALUES ($1, $2, $3, $4, $5)",
          {random_id(20), n.order_no, n.trade_no, n.amount, now});
  const std::string message = boost::json::serialize(boost::json::object{
      {"order_no", n.order_no}, {"user_id", order[0].text(0)}, {"points", n.amount / 100}});
  db.exec("INSERT INTO t_outbox (id, order_no, payload, created_at) VALUES ($1, $2, $3, $4)",
          {"order.paid:" + n.order_no, n.order_no, message, now});
  return Payment::paid;
}

}  // namespace shop
