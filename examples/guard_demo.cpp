// guard_demo: an orders service whose "create order" runs at most once per idempotency key.
//
//   guard_demo [STORE_URI]     default: sqlite: in a temporary file; e.g. guard_demo memory:
//
// It places an order, repeats the request (the client's retry after a timeout), fires a
// double click of 8 threads at once, and reuses a key for a different cart. It prints what
// happened and exits 0 only when every repeat got the first order and exactly one order
// was created per key, so it doubles as a smoke test.
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "idem/fingerprint.h"
#include "idem/guard.h"
#include "idem/open.h"

namespace {

using namespace std::chrono_literals;

// The service behind the guard: its own table of orders, written once per execution.
class Orders {
 public:
  // The side effect. `fence` would go into a conditional write in a real database.
  std::string create(const std::string& cart, idem::Fence fence) {
    std::lock_guard lock(mu_);
    const std::string id = "order-" + std::to_string(orders_.size() + 1);
    orders_[id] = cart;
    (void)fence;
    return id;
  }
  std::size_t count() const {
    std::lock_guard lock(mu_);
    return orders_.size();
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> orders_;
};

// What a client request becomes: the user's scope, its Idempotency-Key, and a fingerprint
// of the cart so that a key reused for another cart is refused.
idem::GuardResult place_order(idem::Guard& guard, Orders& orders, const std::string& user,
                              const std::string& key, const std::string& cart) {
  return guard.run(user, key, idem::hash128(cart),
                   [&](idem::Fence fence) { return orders.create(cart, fence); });
}

bool check(bool ok, const std::string& what) {
  std::cout << (ok ? "  ok    " : "  FAIL  ") << what << "\n";
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path temp_db;
  std::string uri;
  if (argc > 1) {
    uri = argv[1];
  } else {
    temp_db =
        std::filesystem::temp_directory_path() / ("idem-guard-demo-" + std::to_string(getpid()) + ".db");
    uri = "sqlite:" + temp_db.string();
  }
  bool ok = true;
  {
    auto store = idem::open_store(uri);
    if (!store) {
      std::cerr << "guard_demo: cannot open " << uri << ": " << store.status().to_string() << "\n";
      return 1;
    }
    std::cout << "store " << uri << "\n";
    idem::Guard guard(**store, {.lease = 30s, .retention = 24h, .wait = 5s});
    Orders orders;

    auto first = place_order(guard, orders, "alice", "checkout-1", "2 x espresso");
    std::cout << "first request:  " << to_string(first.outcome()) << " -> "
              << (first ? *first : first.status().to_string()) << "\n";
    auto retry = place_order(guard, orders, "alice", "checkout-1", "2 x espresso");
    std::cout << "client retry:   " << to_string(retry.outcome()) << " -> "
              << (retry ? *retry : retry.status().to_string()) << "\n";
    ok &= check(first.executed() && retry.replayed() && *first == *retry, "the retry got the first order");

    // A double click: 8 submissions of one form at the same moment.
    std::vector<idem::GuardResult> clicks;
    std::mutex clicks_mu;
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&] {
        auto r = place_order(guard, orders, "bob", "checkout-2", "1 x cake");
        std::lock_guard lock(clicks_mu);
        clicks.push_back(std::move(r));
      });
    }
    for (auto& t : threads) t.join();
    int executed = 0;
    bool same = true;
    for (auto& r : clicks) {
      executed += r.executed();
      same = same && r && clicks.front() && *r == *clicks.front();
    }
    std::cout << "double click:   8 submissions, " << executed << " executed, "
              << (same && clicks.front() ? "all answered " + *clicks.front() : std::string("answers differ"))
              << "\n";
    ok &= check(executed == 1 && same, "one order for 8 clicks, the same answer for all");

    auto reused = place_order(guard, orders, "alice", "checkout-1", "99 x espresso");
    std::cout << "key reused:     " << to_string(reused.outcome()) << " -> " << reused.status().to_string()
              << "\n";
    ok &= check(reused.outcome() == idem::GuardResult::Outcome::key_reused,
                "a key reused for another cart is refused");

    ok &= check(orders.count() == 2, "orders created: " + std::to_string(orders.count()) + " (expected 2)");
  }
  if (!temp_db.empty()) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::error_code ec;
      std::filesystem::remove(temp_db.string() + suffix, ec);
    }
  }
  std::cout << (ok ? "guard_demo: all invariants hold\n" : "guard_demo: INVARIANT VIOLATED\n");
  return ok ? 0 : 1;
}
