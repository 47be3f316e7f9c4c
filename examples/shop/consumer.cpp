// shop-consumer: grants loyalty points for each order.paid message (examples/shop/README.md).
//
//   shop-consumer --amqp URL --db URI --store URI [--queue order.paid]
//                 [--crash-before-ack N] [--lease 3s]
//
// RabbitMQ delivers at least once: a consumer that dies between its work and its ack gets
// the message redelivered, and the payment side may publish one order.paid twice. Two
// defences make the grant happen once:
//   1. idem::Deduplicator, keyed by the message id: a message handled before is acked
//      without running again (consumer.duplicate);
//   2. the ledger t_points, keyed by order_no, written in the same transaction as the
//      balance: it absorbs what the first cannot see, a crash after the transaction
//      committed but before the Deduplicator recorded it (consumer.ledger_unique).
// A message that can never be handled (not the JSON of README.md) is logged and acked
// (consumer.poison). Anything that failed before the ack is requeued and tried again.
//
// Exit status: 0 after SIGTERM/SIGINT, 1 when the idem store cannot be opened, 2 on a
// usage error. Broker and database outages are waited out (reconnecting with backoff).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "amqp.h"
#include "db.h"
#include "idem/deduplicator.h"
#include "idem/open.h"

namespace {

using namespace std::chrono_literals;

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop = true; }

// Sleeps for d, or less once a stop was asked for.
void pause_for(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!g_stop && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::min(d, 50ms));
}

struct Options {
  std::string amqp;
  std::string db;
  std::string store;
  std::string queue = "order.paid";
  int crash_before_ack = 0;  // 0 = never
  idem::Duration lease = 3s;
  shop::AmqpUrl url;
};

// The body of order.paid (README.md "The message").
struct PaidOrder {
  std::string order_no;
  std::string user_id;
  std::int64_t points = 0;
};

// nullopt unless the body is {"order_no": non-empty string, "user_id": non-empty string,
// "points": integer >= 0}; other fields are ignored.
std::optional<PaidOrder> parse_paid_order(std::string_view body) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const boost::json::object& o = v.get_object();
  const auto text = [&](std::string_view name) -> std::optional<std::string> {
    const boost::json::value* f = o.if_contains(name);
    if (f == nullptr || !f->is_string() || f->get_string().empty()) return std::nullopt;
    return std::string(f->get_string());
  };
  PaidOrder m;
  auto order_no = text("order_no");
  auto user_id = text("user_id");
  const boost::json::value* points = o.if_contains("points");
  if (!order_no || !user_id || points == nullptr) return std::nullopt;
  if (points->is_int64()) {
    m.points = points->get_int64();
  } else if (points->is_uint64() && points->get_uint64() <= std::numeric_limits<std::int64_t>::max()) {
    m.points = static_cast<std::int64_t>(points->get_uint64());
  } else {
    return std::nullopt;
  }
  if (m.points < 0) return std::nullopt;
  m.order_no = std::move(*order_no);
  m.user_id = std::move(*user_id);
  return m;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One consumer process: one broker connection and one database connection, each reopened
// when it breaks. Single-threaded.
class PointsConsumer {
 public:
  PointsConsumer(const Options& opt, idem::Store& store)
      : opt_(opt),
        dedup_(
            store, "points-consumer",
            {.lease = opt.lease, .retention = 24h, .renew = true, .on_uncertain = idem::OnUncertain::retry}) {
  }

  int run() {
    std::chrono::milliseconds backoff = 100ms;
    const auto wait_and_back_off = [&] {
      pause_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2s));
    };
    bool announced = false;
    while (!g_stop) {
      if (!db_ && !open_db()) {
        wait_and_back_off();
        continue;
      }
      if (!consumer_) {
        try {
          consumer_ = std::make_unique<shop::Consumer>(opt_.url, opt_.queue);
        } catch (const shop::AmqpError& e) {
          std::cerr << "shop-consumer: " << e.what() << "; retrying in " << backoff.count() << " ms\n";
          wait_and_back_off();
          continue;
        }
        if (!announced) {
          std::cerr << "shop-consumer: consuming '" << opt_.queue << "' at amqp://" << opt_.url.host << ":"
                    << opt_.url.port << " (vhost " << opt_.url.vhost << "), db " << opt_.db << ", store "
                    << opt_.store << "\n";
          announced = true;
        }
        backoff = 100ms;
      }
      try {
        if (auto d = consumer_->next(250ms)) handle(*d);
      } catch (const shop::AmqpError& e) {
        // The broker went away or closed the channel: unacked messages return to the
        // queue, and the next consumer handles them (the Deduplicator skips what we did).
        std::cerr << "shop-consumer: " << e.what() << "; reconnecting\n";
        consumer_.reset();
      }
    }
    return 0;
  }

 private:
  bool open_db() {
    try {
      db_ = shop::Db::open(opt_.db);
      shop::ensure_schema(*db_);
      return true;
    } catch (const shop::DbError& e) {
      std::cerr << "shop-consumer: database " << opt_.db << ": " << e.what() << "\n";
      db_.reset();
      return false;
    }
  }

  // A failed database call: a broken connection is reopened before the next message.
  void database_failed(const shop::DbError& e) {
    std::cerr << "shop-consumer: database: " << e.what() << "\n";
    if (e.kind() == shop::DbError::Kind::unavailable) db_.reset();
  }

  // Counts in t_stats; false (and the database dropped if it broke) when it could not.
  bool count(std::string_view name) {
    if (!db_) return false;
    try {
      shop::count(*db_, name);
      return true;
    } catch (const shop::DbError& e) {
      database_failed(e);
      return false;
    }
  }

  // The work, in one transaction: the ledger row and the balance together, or neither.
  idem::Status grant(const PaidOrder& m) {
    try {
      shop::transaction(*db_, [&](shop::Db& tx) {
        // MySQL: a duplicate updates nothing and counts 0 (no INSERT IGNORE, which would
        // also turn other errors into warnings).
        const std::int64_t inserted =
            tx.exec(shop::by_dialect(tx,
                                     "INSERT INTO t_points(order_no, user_id, points, created_at) "
                                     "VALUES ($1, $2, $3, $4) ON CONFLICT (order_no) DO NOTHING",
                                     "INSERT INTO t_points(order_no, user_id, points, created_at) "
                                     "VALUES ($1, $2, $3, $4) ON DUPLICATE KEY UPDATE order_no = order_no"),
                    {m.order_no, m.user_id, m.points, now_us()});
        if (inserted == 1) {
          tx.exec(
              shop::by_dialect(
                  tx,
                  "INSERT INTO t_user_points(user_id, balance) VALUES ($1, $2) "
                  "ON CONFLICT (user_id) DO UPDATE SET balance = t_user_points.balance + excluded.balance",
                  "INSERT INTO t_user_points(user_id, balance) VALUES ($1, $2) "
                  "ON DUPLICATE KEY UPDATE balance = balance + $2"),
              {m.user_id, m.points});
          // Counted with the grant itself, so the counter equals the ledger across crashes.
          shop::count(tx, "consumer.processed");
        } else {
          // The last line of defence: the grant committed before, but the Deduplicator
          // never recorded it (a crash between the two).
          shop::count(tx, "consumer.ledger_unique");
        }
      });
      return idem::Status::ok();
    } catch (const shop::DbError& e) {
      database_failed(e);
      return idem::unavailable(std::string("shop database: ") + e.what());
    }
  }

  // Gives a message back to the broker to be tried again a little later.
  void retry_later(const shop::Delivery& d) {
    pause_for(200ms);
    consumer_->nack(d.delivery_tag, /*requeue=*/true);
  }

  void handle(const shop::Delivery& d) {
    const std::optional<PaidOrder> m = parse_paid_order(d.body);
    if (!m) {
      std::cerr << "shop-consumer: poison message '" << d.message_id << "' (" << d.body.size()
                << " bytes, not {order_no, user_id, points}): acked, never retried\n";
      if (!count("consumer.poison")) return retry_later(d);
      return consumer_->ack(d.delivery_tag);
    }
    // order.paid:<order_no> per README; a publisher that sent no id is de-duplicated the same way.
    const std::string id = d.message_id.empty() ? "order.paid:" + m->order_no : d.message_id;

    idem::Result<idem::Delivery> r = dedup_.handle(id, [&]() -> idem::Status { return grant(*m); });
    if (!r) {
      std::cerr << "shop-consumer: " << id << ": " << r.status().to_string() << "; requeued\n";
      return retry_later(d);
    }
    switch (r->kind) {
      case idem::Delivery::Kind::processed:
        if (opt_.crash_before_ack > 0 && ++processed_ == opt_.crash_before_ack) {
          std::cerr << "shop-consumer: --crash-before-ack " << opt_.crash_before_ack
                    << ": killed before acking " << id << "\n";
          ::raise(SIGKILL);
        }
        return consumer_->ack(d.delivery_tag);
      case idem::Delivery::Kind::duplicate:
        if (!count("consumer.duplicate")) return retry_later(d);
        return consumer_->ack(d.delivery_tag);
      case idem::Delivery::Kind::in_progress:
        // Another consumer holds it (or a dead one's lease has not ended): come back later.
        pause_for(std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(r->retry_after), 50ms,
                             std::chrono::milliseconds(500ms)));
        return consumer_->nack(d.delivery_tag, /*requeue=*/true);
      case idem::Delivery::Kind::uncertain:
        // Only with OnUncertain::hold, which this consumer does not use.
        std::cerr << "shop-consumer: " << id << ": uncertain; acked for a person to look at\n";
        return consumer_->ack(d.delivery_tag);
    }
  }

  const Options& opt_;
  idem::Deduplicator dedup_;
  std::unique_ptr<shop::Db> db_;
  std::unique_ptr<shop::Consumer> consumer_;
  int processed_ = 0;
};

// The options, or the exit status when the command line was not usable (or was --help).
std::variant<Options, int> parse_args(int argc, char** argv) {
  Options opt;
  double lease_ms = 3000;
  CLI::App app{"shop-consumer: grants loyalty points for each order.paid message, once"};
  app.add_option("--amqp", opt.amqp, "RabbitMQ URL, amqp://USER:PASSWORD@HOST:PORT/VHOST")->required();
  app.add_option("--db", opt.db, "The shop's database: sqlite:PATH, postgres://... or mysql://...")
      ->required();
  app.add_option("--store", opt.store, "The idem store of the de-duplication, any store URI")->required();
  app.add_option("--queue", opt.queue, "The queue to consume (default order.paid)");
  app.add_option("--crash-before-ack", opt.crash_before_ack,
                 "Kill this process (SIGKILL) after handling the N-th message, before its ack")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lease", lease_ms, "How long one consumer holds a message (default 3s)")
      ->transform(CLI::AsNumberWithUnit(
          std::map<std::string, double>{{"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}},
          CLI::AsNumberWithUnit::UNIT_REQUIRED, "DURATION"));
  try {
    app.parse(argc, argv);
    if (opt.queue.empty()) throw CLI::ValidationError("--queue", "must not be empty");
    // At most 3650d, as long as a duration in idem.yaml may be.
    if (!(lease_ms > 0 && lease_ms <= 3650 * 86400e3))
      throw CLI::ValidationError("--lease", "must be a duration > 0, e.g. 3s");
    opt.lease = std::chrono::ceil<idem::Duration>(std::chrono::duration<double, std::milli>(lease_ms));
    try {
      opt.url = shop::AmqpUrl::parse(opt.amqp);
    } catch (const shop::AmqpError& e) {
      throw CLI::ValidationError("--amqp", e.what());
    }
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = parse_args(argc, argv);
  if (const int* rc = std::get_if<int>(&parsed)) return *rc;
  const Options& opt = std::get<Options>(parsed);

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a broken broker socket is an error return, not a death

  auto store = idem::open_store(opt.store);
  if (!store) {
    std::cerr << "shop-consumer: cannot open store " << opt.store << ": " << store.status().to_string()
              << "\n";
    return 1;
  }
  try {
    return PointsConsumer(opt, **store).run();
  } catch (const std::exception& e) {
    std::cerr << "shop-consumer: " << e.what() << "\n";
    return 1;
  }
}
