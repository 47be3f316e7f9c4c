#include "gateway/http/io_pool.h"

#include <thread>

namespace idem::gateway {

IoPool::IoPool(unsigned threads) {
  if (threads == 0) threads = 1;
  for (unsigned i = 0; i < threads; ++i) {
    contexts_.push_back(std::make_unique<boost::asio::io_context>(1));  // one thread: no locking
    guards_.emplace_back(contexts_.back()->get_executor());
  }
}

boost::asio::io_context& IoPool::next() noexcept {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void IoPool::run() {
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts_.size(); ++i)
    threads.emplace_back([c = contexts_[i].get()] { c->run(); });
  contexts_.front()->run();
  for (auto& t : threads) t.join();
}

void IoPool::stop() {
  for (auto& c : contexts_) c->stop();
}

}  // namespace idem::gateway
