// The transactional outbox's relay: a thread that publishes unsent t_outbox rows to the
// broker, in order, and marks each sent only after the broker confirmed it. A crash
// between the two publishes the row again on restart (at least once; the consumer
// de-duplicates by message id = the row's id).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "amqp.h"
#include "db.h"

namespace shop {

class OutboxRelay {
 public:
  // Starts the thread. The pool must outlive the relay.
  OutboxRelay(DbPool& pool, AmqpUrl url, std::string queue);
  ~OutboxRelay();  // stop()
  OutboxRelay(const OutboxRelay&) = delete;
  OutboxRelay& operator=(const OutboxRelay&) = delete;

  // A row was committed: look now rather than at the next poll. Thread-safe.
  void wake();
  // Finishes the message in flight (bounded by the broker's confirm timeout) and joins.
  void stop();

 private:
  void run();
  int relay_batch(Publisher& publisher);  // how many rows it marked sent
  void note_error(const std::string& what);
  bool pause(std::chrono::milliseconds d);  // false when stopping

  DbPool& pool_;
  const AmqpUrl url_;
  const std::string queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool woken_ = false;
  std::string last_error_;  // only the relay thread touches it
  std::thread thread_;
};

}  // namespace shop
