// consumer_demo: a points service consuming "payment succeeded" events from an
// at-least-once broker, made effectively-once by idem::Deduplicator.
//
//   consumer_demo [STORE_URI]     default: memory:
//
// The simulated broker delivers every message twice (as brokers do after a lost ack) to
// two competing consumers, and requeues a message whose handling fails — one does, the
// first time. The demo prints each delivery and exits 0 only when every payment granted
// its points exactly once, so it doubles as a smoke test.
#include <condition_variable>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "idem/deduplicator.h"
#include "idem/open.h"

namespace {

using namespace std::chrono_literals;

struct Message {
  std::string id;  // the producer's message id: what de-duplication keys on
  std::string user;
  int points = 0;
};

// A queue with acknowledgements: a message taken is in flight until acked or nacked;
// nack puts it back at the end (redelivery).
class Broker {
 public:
  void publish(Message m) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(m));
  }
  // The next delivery, or nullopt once the queue is empty and nothing is in flight.
  std::optional<Message> take() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !queue_.empty() || in_flight_ == 0; });
    if (queue_.empty()) return std::nullopt;
    Message m = std::move(queue_.front());
    queue_.pop_front();
    ++in_flight_;
    return m;
  }
  void ack() { settle(std::nullopt); }
  void nack(Message m) { settle(std::move(m)); }

 private:
  void settle(std::optional<Message> requeue) {
    {
      std::lock_guard lock(mu_);
      if (requeue) queue_.push_back(std::move(*requeue));
      --in_flight_;
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> queue_;
  int in_flight_ = 0;
};

// The side effect: points granted to users. Not idempotent on its own.
class Ledger {
 public:
  idem::Status grant(const Message& m) {
    std::lock_guard lock(mu_);
    if (m.id == "pay-3" && !failed_once_) {
      failed_once_ = true;
      return idem::unavailable("ledger timed out");  // nothing granted; the broker redelivers
    }
    points_[m.user] += m.points;
    ++grants_;
    return idem::Status::ok();
  }
  int points(const std::string& user) const {
    std::lock_guard lock(mu_);
    auto it = points_.find(user);
    return it == points_.end() ? 0 : it->second;
  }
  int grants() const {
    std::lock_guard lock(mu_);
    return grants_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int> points_;
  int grants_ = 0;
  bool failed_once_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string uri = argc > 1 ? argv[1] : "memory:";
  auto store = idem::open_store(uri);
  if (!store) {
    std::cerr << "consumer_demo: cannot open " << uri << ": " << store.status().to_string() << "\n";
    return 1;
  }
  std::cout << "store " << uri << "\n";

  const std::vector<Message> payments = {
      {"pay-1", "alice", 10}, {"pay-2", "bob", 25}, {"pay-3", "alice", 5}, {"pay-4", "carol", 40}};
  Broker broker;
  for (int copy = 0; copy < 2; ++copy) {
    for (const auto& m : payments) broker.publish(m);
  }

  idem::Deduplicator dedup(**store, "points-service", {.lease = 30s, .retention = 24h});
  Ledger ledger;
  std::mutex out_mu;
  auto consumer = [&](const std::string& name) {
    while (auto m = broker.take()) {
      auto d = dedup.handle(m->id, [&] { return ledger.grant(*m); });
      // Ack what was handled (now or before); hand back what failed or is running elsewhere.
      const bool ack = d && d->ack();
      {
        std::lock_guard lock(out_mu);
        std::cout << "  " << name << " " << m->id << " (" << m->user << " +" << m->points
                  << "): " << (d ? to_string(d->kind) : d.status().to_string())
                  << (ack ? ": ack" : ": nack, redeliver") << "\n";
      }
      if (ack) {
        broker.ack();
      } else {
        if (d) std::this_thread::sleep_for(5ms);  // in progress elsewhere: a broker delays redelivery
        broker.nack(*m);
      }
    }
  };
  std::thread a(consumer, "consumer-a"), b(consumer, "consumer-b");
  a.join();
  b.join();

  const bool ok = ledger.grants() == 4 && ledger.points("alice") == 15 && ledger.points("bob") == 25 &&
                  ledger.points("carol") == 40;
  std::cout << "grants " << ledger.grants() << " (expected 4); alice " << ledger.points("alice") << ", bob "
            << ledger.points("bob") << ", carol " << ledger.points("carol") << "\n"
            << (ok ? "consumer_demo: every payment granted its points exactly once\n"
                   : "consumer_demo: INVARIANT VIOLATED\n");
  return ok ? 0 : 1;
}
