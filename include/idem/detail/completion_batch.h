// Answers of a group commit, posted together: a store that answers many calls at once on
// its own thread (SQLite answers a whole transaction's operations after its COMMIT) opens a
// CompletionBatch around the callbacks. While it is open on that thread, the completions of
// idem/async.h are collected per executor and, when it closes, posted with one post (one
// wake-up of the executor's thread) per executor, in the order they were answered, instead
// of one post per call. Nothing else changes: every completion still runs on its own
// executor, never inline, and keeps that executor's work count up until it ran.
//
// Thread safety: a batch belongs to the thread that opened it; batches nest.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

#include "idem/detail/unique_function.h"

namespace idem::detail {

class CompletionBatch {
 public:
  CompletionBatch() noexcept : outer_(std::exchange(current_, this)) {}
  ~CompletionBatch() {
    current_ = outer_;
    for (Group& g : groups_) {
      // The executor may stop (and its owner destroy it) as soon as the completions ran,
      // which can be before post() returns here: hold its work count until then.
      auto work = boost::asio::make_work_guard(g.executor);
      boost::asio::post(g.executor, Run{g.executor, std::move(g.completions)});
    }
  }
  CompletionBatch(const CompletionBatch&) = delete;
  CompletionBatch& operator=(const CompletionBatch&) = delete;

  // The batch open on this thread, or nullptr.
  static CompletionBatch* current() noexcept { return current_; }

  void add(const boost::asio::any_io_executor& ex, UniqueFunction<void()> completion) {
    for (Group& g : groups_) {
      if (g.executor == ex) return g.completions.push_back(std::move(completion));
    }
    groups_.push_back({ex, {}});
    groups_.back().completions.push_back(std::move(completion));
  }

 private:
  using Completions = std::vector<UniqueFunction<void()>>;
  struct Group {
    boost::asio::any_io_executor executor;
    Completions completions;
  };
  // Runs one executor's completions in order. Should one throw, the rest are posted again
  // before the exception leaves the executor's run(), as separately posted ones would wait.
  struct Run {
    boost::asio::any_io_executor executor;
    Completions completions;
    void operator()() {
      for (std::size_t i = 0; i < completions.size(); ++i) {
        try {
          completions[i]();
        } catch (...) {
          Completions rest(std::make_move_iterator(completions.begin() + static_cast<std::ptrdiff_t>(i) + 1),
                           std::make_move_iterator(completions.end()));
          if (!rest.empty()) boost::asio::post(executor, Run{executor, std::move(rest)});
          throw;
        }
      }
    }
  };

  inline static thread_local CompletionBatch* current_ = nullptr;
  CompletionBatch* outer_;
  std::vector<Group> groups_;
};

}  // namespace idem::detail
