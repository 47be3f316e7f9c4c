// The payment state machine both payment endpoints share (README.md, POST /pay/callback
// and POST /pay/notify): in the caller's transaction, an order goes CREATED → PAID with
// its charge and its outbox row, or nothing changes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "db.h"

namespace shop {

// A signed notification of a successful payment.
struct Notification {
  std::string order_no, trade_no;
  std::int64_t amount = 0;  // cents
};

enum class Payment { paid, already_paid, unknown_order, wrong_amount };

// The conditional update WHERE status = 'CREATED' makes a re-run charge nothing: it counts
// "<channel>.already_paid" in t_stats and answers already_paid.
Payment record_payment(Db& db, const Notification& n, std::string_view channel);

}  // namespace shop
