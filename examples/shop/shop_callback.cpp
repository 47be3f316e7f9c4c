// POST /pay/callback: the payment platform's notification, re-sent until it reads
// "success". Three layers keep one payment to one charge: the signature (nothing
// unsigned changes anything), the Guard (one run per out_trade_no; repeats replay), and
// the conditional update WHERE status = 'CREATED' (shop_payment.h: a re-run after a crash
// charges nothing).
#include <charconv>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "callback_sign.h"
#include "idem/fingerprint.h"
#include "shop_payment.h"
#include "shop_service.h"

namespace shop {
namespace {

Reply text(unsigned status, std::string body) { return Reply{status, "text/plain", std::move(body), {}}; }
Reply fail(unsigned status) { return text(status, "fail"); }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded; nullopt on a malformed escape or a repeated name.
std::optional<std::map<std::string, std::string>> parse_form(std::string_view body) {
  auto decode = [](std::string_view s) -> std::optional<std::string> {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        out += ' ';
      } else if (s[i] != '%') {
        out += s[i];
      } else {
        if (i + 2 >= s.size()) return std::nullopt;
        const int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
      }
    }
    return out;
  };
  std::map<std::string, std::string> form;
  while (!body.empty()) {
    const std::string_view pair = body.substr(0, body.find('&'));
    body.remove_prefix(std::min(body.size(), pair.size() + 1));
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) return std::nullopt;
    auto name = decode(pair.substr(0, eq));
    auto value = decode(pair.substr(eq + 1));
    if (!name || !value || !form.emplace(std::move(*name), std::move(*value)).second) return std::nullopt;
  }
  return form;
}

// The fields but `sign` as k=v, sorted by name (std::map is), joined with '&'.
std::string signed_string(const std::map<std::string, std::string>& form) {
  std::string s;
  for (const auto& [k, v] : form) {
    if (k == "sign") continue;
    if (!s.empty()) s += '&';
    s += k + "=" + v;
  }
  return s;
}

}  // namespace

Reply Shop::pay_callback(const Request& req) {
  auto form = parse_form(req.body);
  auto field = [&](const char* name) -> const std::string* {
    auto it = form->find(name);
    return it == form->end() || it->second.empty() ? nullptr : &it->second;
  };
  const std::string signed_part = form ? signed_string(*form) : std::string();
  if (!form || !field("sign") || !callback_signature_ok(options_.secret, signed_part, *field("sign"))) {
    auto lease = pool_.acquire();
    transaction(*lease, [](Db& db) { count(db, "callback.bad_sign"); });
    return fail(400);
  }
  const std::string *order_no = field("out_trade_no"), *trade_no = field("trade_no"),
                    *amount = field("total_amount"), *status = field("trade_status");
  Notification n;
  if (amount) {
    const char* end = amount->data() + amount->size();
    if (std::from_chars(amount->data(), end, n.amount).ptr != end) n.amount = -1;
  }
  if (!order_no || !trade_no || !status || !amount || n.amount < 0) return fail(400);
  // Other states (WAIT_BUYER_PAY, TRADE_CLOSED) are acknowledged and change nothing.
  if (*status != "TRADE_SUCCESS") return text(200, "success");
  n.order_no = *order_no;
  n.trade_no = *trade_no;

  std::optional<Payment> refused;
  auto pay = [&]() -> idem::Result<std::string> {
    auto lease = pool_.acquire();
    const Payment p = transaction(*lease, [&](Db& db) { return record_payment(db, n, "callback"); });
    if (p == Payment::unknown_order || p == Payment::wrong_amount) {
      refused = p;  // not stored: the guard releases the key, so a later re-send runs again
      return idem::failed_precondition("refused");
    }
    if (p == Payment::paid && on_paid_) on_paid_();
    return std::string("success");
  };
  idem::GuardResult r = [&] {
    try {
      return guard_.run("pay-callback", n.order_no, idem::hash128(signed_part), pay);
    } catch (const DbError& e) {
      std::fprintf(stderr, "shop: pay callback %s: %s\n", n.order_no.c_str(), e.what());
      return idem::GuardResult::make_failed(idem::unavailable(e.what()));
    }
  }();
  if (refused) return fail(*refused == Payment::unknown_order ? 404 : 400);
  return callback_answer(r, n.order_no);
}

// What the platform reads, by the guard's outcome; repeats are counted.
Reply Shop::callback_answer(const idem::GuardResult& r, const std::string& order_no) {
  auto counted = [&](const char* name, Reply reply) {
    auto lease = pool_.acquire();
    transaction(*lease, [&](Db& db) { count(db, name); });
    return reply;
  };
  using Outcome = idem::GuardResult::Outcome;
  switch (r.outcome()) {
    case Outcome::executed:
      return text(200, "success");
    case Outcome::replayed:
      return counted("callback.replayed", text(200, "success"));
    case Outcome::in_progress: {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(r.retry_after()).count();
      Reply reply = fail(503);
      reply.headers.emplace_back("Retry-After", std::to_string(std::max<std::int64_t>(1, (ms + 999) / 1000)));
      return counted("callback.in_progress", std::move(reply));
    }
    case Outcome::key_reused:
      return fail(409);
    case Outcome::outcome_unknown:
    case Outcome::failed:
      break;
  }
  std::fprintf(stderr, "shop: pay callback %s: %s\n", order_no.c_str(), r.status().to_string().c_str());
  Reply reply = fail(503);
  reply.headers.emplace_back("Retry-After", "1");
  return reply;
}

}  // namespace shop
