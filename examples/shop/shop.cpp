// shop: the reference shop's service (README.md). Orders, stock, the payment callback
// and the outbox relay, over one database (SQLite, PostgreSQL or MySQL).
//
//   shop --listen 127.0.0.1:9100 --db URI --store URI --amqp URL [--queue order.paid]
//        [--secret S] [--pool 8] [--slow-percent 0] [--slow-ms 0] [--seed SKU=STOCK[@PRICE] ...]
//
// Exit codes: 0 after SIGTERM/SIGINT, 2 on a usage error, 1 when it cannot start.
#include <charconv>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/ip/address.hpp>

#include "amqp.h"
#include "db.h"
#include "idem/guard.h"
#include "idem/open.h"
#include "shop_outbox.h"
#include "shop_server.h"
#include "shop_service.h"

namespace {

using namespace std::chrono_literals;

struct Seed {
  std::string sku;
  std::int64_t stock = 0;
  std::int64_t price = 1999;
};

std::optional<std::int64_t> parse_count(std::string_view s) {
  std::int64_t n = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n < 0) return std::nullopt;
  return n;
}

// SKU=STOCK[@PRICE]
std::optional<Seed> parse_seed(std::string_view s) {
  const auto eq = s.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  Seed seed{std::string(s.substr(0, eq))};
  std::string_view rest = s.substr(eq + 1);
  const auto at = rest.find('@');
  auto stock = parse_count(rest.substr(0, at));
  if (!stock) return std::nullopt;
  seed.stock = *stock;
  if (at != std::string_view::npos) {
    auto price = parse_count(rest.substr(at + 1));
    if (!price) return std::nullopt;
    seed.price = *price;
  }
  return seed;
}

std::optional<boost::asio::ip::tcp::endpoint> parse_listen(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  boost::system::error_code ec;
  auto host = s.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto address = boost::asio::ip::make_address(host, ec);
  auto port = parse_count(std::string_view(s).substr(colon + 1));
  if (ec || !port || *port > 65535) return std::nullopt;
  return boost::asio::ip::tcp::endpoint(address, static_cast<unsigned short>(*port));
}

int usage(const std::string& message) {
  std::fprintf(stderr, "shop: %s\n", message.c_str());
  return 2;
}

void seed_skus(shop::Db& db, const std::vector<Seed>& seeds) {
  shop::transaction(db, [&](shop::Db& tx) {
    for (const Seed& s : seeds) {
      tx.exec(
          shop::by_dialect(
              tx,
              "INSERT INTO t_sku (sku_id, stock, version, price, initial_stock) VALUES ($1, $2, 0, $3, $2) "
              "ON CONFLICT (sku_id) DO UPDATE SET stock = excluded.stock, version = 0, price = "
              "excluded.price, "
              "initial_stock = excluded.initial_stock",
              "INSERT INTO t_sku (sku_id, stock, version, price, initial_stock) VALUES ($1, $2, 0, $3, $2) "
              "ON DUPLICATE KEY UPDATE stock = $2, version = 0, price = $3, initial_stock = $2"),
          {s.sku, s.stock, s.price});
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("shop: the reference shop's service (examples/shop/README.md)");
  std::string listen = "127.0.0.1:9100", db_uri = "sqlite:./shop.db", store_uri = "sqlite:./shop-idem.db";
  std::string amqp = "amqp://guest:guest@127.0.0.1:5672/", queue = "order.paid";
  shop::ShopOptions options;
  std::size_t pool_size = 8;
  std::vector<std::string> seed_args;
  app.add_option("--listen", listen, "HOST:PORT to serve HTTP on")->capture_default_str();
  app.add_option("--db", db_uri, "the shop's database: sqlite:PATH, postgres://... or mysql://...")
      ->capture_default_str();
  app.add_option("--store", store_uri, "the idem store of the payment callback's guard")
      ->capture_default_str();
  app.add_option("--amqp", amqp, "the broker the outbox relay publishes to")->capture_default_str();
  app.add_option("--queue", queue, "the queue of order.paid messages")->capture_default_str();
  app.add_option("--secret", options.secret, "the key payment callbacks are signed with")
      ->capture_default_str();
  app.add_option("--pool", pool_size, "database connections")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--slow-percent", options.slow_percent, "share of orders and deductions that answer late")
      ->check(CLI::Range(0, 100));
  app.add_option("--slow-ms", options.slow_ms, "how late, after the commit")->check(CLI::Range(0, 600000));
  app.add_option("--seed", seed_args,
                 "create or reset a SKU: SKU=STOCK[@PRICE] (price in cents, default 1999)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const auto endpoint = parse_listen(listen);
  if (!endpoint) return usage("--listen: expected HOST:PORT, got '" + listen + "'");
  std::vector<Seed> seeds;
  for (const auto& s : seed_args) {
    auto seed = parse_seed(s);
    if (!seed) return usage("--seed: expected SKU=STOCK[@PRICE], got '" + s + "'");
    seeds.push_back(*seed);
  }
  if (!db_uri.starts_with("sqlite:") && !db_uri.starts_with("postgres://") &&
      !db_uri.starts_with("postgresql://") && !db_uri.starts_with("mysql://")) {
    return usage("--db: expected sqlite:PATH, postgres://... or mysql://..., got '" + db_uri + "'");
  }
  shop::AmqpUrl amqp_url;
  try {
    amqp_url = shop::AmqpUrl::parse(amqp);
  } catch (const shop::AmqpError& e) {
    return usage(std::string("--amqp: ") + e.what());
  }
  auto store = idem::open_store(store_uri);
  if (!store && store.status().code() == idem::StatusCode::invalid_argument) {
    return usage("--store: " + store.status().message());
  }
  if (!store) {
    std::fprintf(stderr, "shop: cannot open the store %s: %s\n", store_uri.c_str(),
                 store.status().to_string().c_str());
    return 1;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a peer gone mid-write is an error value, not a signal

  shop::DbPool pool(db_uri, pool_size);
  try {
    auto db = pool.acquire();
    shop::ensure_schema(*db);
    if (!seeds.empty()) seed_skus(*db, seeds);
  } catch (const shop::DbError& e) {
    std::fprintf(stderr, "shop: cannot prepare the database: %s\n",
                 e.what());  // no URI: it may hold a password
    return 1;
  }
  idem::Guard guard(
      **store,
      {.lease = 3s, .retention = 24h, .wait = 5s, .renew = true, .on_uncertain = idem::OnUncertain::retry});
  shop::OutboxRelay relay(pool, amqp_url, queue);
  shop::Shop service(pool, guard, options, [&relay] { relay.wake(); });
  try {
    shop::serve_http(service, *endpoint);
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "shop: cannot listen on %s: %s\n", listen.c_str(), e.what());
    return 1;
  }
  relay.stop();
  return 0;
}
