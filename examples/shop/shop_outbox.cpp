#include "shop_outbox.h"

#include <cstdio>
#include <memory>

#include "shop_service.h"

namespace shop {

using namespace std::chrono_literals;

OutboxRelay::OutboxRelay(DbPool& pool, AmqpUrl url, std::string queue)
    : pool_(pool), url_(std::move(url)), queue_(std::move(queue)), thread_([this] { run(); }) {}

OutboxRelay::~OutboxRelay() { stop(); }

void OutboxRelay::wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  cv_.notify_one();
}

void OutboxRelay::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

bool OutboxRelay::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopping_ || woken_; });
  woken_ = false;
  return !stopping_;
}

// One line per distinct error: a broker that stays down is not logged every 500 ms.
void OutboxRelay::note_error(const std::string& what) {
  if (what != last_error_) std::fprintf(stderr, "shop: outbox relay: %s\n", what.c_str());
  last_error_ = what;
}

void OutboxRelay::run() {
  std::unique_ptr<Publisher> publisher;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    try {
      if (!publisher) publisher = std::make_unique<Publisher>(url_, queue_);
      if (!last_error_.empty()) {
        std::fprintf(stderr, "shop: outbox relay: working again\n");
        last_error_.clear();
      }
      if (relay_batch(*publisher) == 0 && !pause(1s)) return;
    } catch (const AmqpError& e) {
      publisher.reset();  // broken after any error: reconnect
      note_error(std::string("broker: ") + e.what());
      if (!pause(500ms)) return;
    } catch (const DbError& e) {
      note_error(std::string("database: ") + e.what());
      if (!pause(500ms)) return;
    }
  }
}

int OutboxRelay::relay_batch(Publisher& publisher) {
  auto db = pool_.acquire();
  auto rows =
      db->query("SELECT id, payload FROM t_outbox WHERE sent_at IS NULL ORDER BY created_at, id LIMIT 64");
  int sent = 0;
  for (const Row& row : rows) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    publisher.publish(row.text(0), row.text(1));  // waits for the broker's confirm
    transaction(*db, [&](Db& tx) {
      if (tx.exec("UPDATE t_outbox SET sent_at = $1 WHERE id = $2 AND sent_at IS NULL",
                  {now_micros(), row.text(0)}) == 1) {
        count(tx, "outbox.published");
      }
    });
    ++sent;
  }
  return sent;
}

}  // namespace shop
