// Asio adapters for Store: every operation as an Asio asynchronous operation, so that
// coroutines write `auto r = co_await idem::async_begin(store, args, asio::use_awaitable);`
// and no event loop ever blocks on a store.
//
// The completion handler always runs on its associated executor (posted, never inline),
// and the operation keeps that executor's work count up until it completes; a store that
// answers a group of calls at once posts their completions together (detail/completion_batch.h). The
// signature is void(Result<T>) (status.h): errors are values here too.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <type_traits>

#include "idem/detail/completion_batch.h"
#include "idem/store.h"

namespace idem {
namespace detail {

template <class T, class Start, class Token>
auto async_store_op(Start start, Token&& token) {
  namespace asio = boost::asio;
  return asio::async_initiate<Token, void(Result<T>)>(
      [](auto handler, Start start_op) {
        auto work = asio::make_work_guard(asio::get_associated_executor(handler));
        start_op([handler = std::move(handler), work = std::move(work)](Result<T> r) mutable {
          auto ex = work.get_executor();
          using Executor = decltype(ex);
          if constexpr (std::is_convertible_v<Executor, asio::any_io_executor>) {
            // Answered in a group (completion_batch.h): one post per executor and batch.
            if (CompletionBatch* batch = CompletionBatch::current()) {
              return batch->add(
                  ex, [handler = std::move(handler), r = std::move(r), work = std::move(work)]() mutable {
                    std::move(handler)(std::move(r));
                    work.reset();
                  });
            }
          }
          asio::post(ex, [handler = std::move(handler), r = std::move(r)]() mutable {
            std::move(handler)(std::move(r));
          });
          work.reset();
        });
      },
      token, std::move(start));
}

}  // namespace detail

#define IDEM_ASYNC_OP(T, name, Args)                               \
  template <class Token>                                           \
  auto async_##name(Store& store, Args args, Token&& token) {      \
    return detail::async_store_op<T>(                              \
        [&store, args = std::move(args)](Callback<T> cb) mutable { \
          store.name(std::move(args), std::move(cb));              \
        },                                                         \
        std::forward<Token>(token));                               \
  }

IDEM_ASYNC_OP(BeginOutcome, begin, BeginArgs)
IDEM_ASYNC_OP(CommitOutcome, commit, CommitArgs)
IDEM_ASYNC_OP(ReleaseOutcome, release, ReleaseArgs)
IDEM_ASYNC_OP(ReleaseOutcome, abandon, AbandonArgs)
IDEM_ASYNC_OP(ExtendOutcome, extend, ExtendArgs)
IDEM_ASYNC_OP(std::optional<Record>, get, RecordId)
IDEM_ASYNC_OP(bool, remove, RecordId)
IDEM_ASYNC_OP(ListPage, list, ListArgs)
IDEM_ASYNC_OP(std::string, issue_token, IssueTokenArgs)
IDEM_ASYNC_OP(ConsumeOutcome, consume_token, TokenArgs)
IDEM_ASYNC_OP(RestoreOutcome, restore_token, RestoreTokenArgs)
IDEM_ASYNC_OP(LockOutcome, lock, LockArgs)
IDEM_ASYNC_OP(UnlockOutcome, unlock, UnlockArgs)
IDEM_ASYNC_OP(LockExtendOutcome, extend_lock, LockArgs)
#undef IDEM_ASYNC_OP

template <class Token>
auto async_sweep(Store& store, Token&& token) {
  return detail::async_store_op<std::uint64_t>(
      [&store](Callback<std::uint64_t> cb) { store.sweep(std::move(cb)); }, std::forward<Token>(token));
}

template <class Token>
auto async_ping(Store& store, Token&& token) {
  return detail::async_store_op<Done>([&store](Callback<Done> cb) { store.ping(std::move(cb)); },
                                      std::forward<Token>(token));
}

}  // namespace idem
