// Tokens: the one-time token operations of store.h (docs/design.md) with less ceremony. It
// issues, consumes and restores one-time tokens of one scope:
//
//   idem::Tokens tokens(store, user_id, 10min);
//   auto t = tokens.issue();                                   // put it in the form
//   ... if (*tokens.consume(t_from_form) != idem::ConsumeOutcome::consumed) reject();
//
// Errors: each call answers as the store's token operation does: an outcome, or a Status
// when the store could not answer (store.h). The async_ forms answer the same without
// blocking their executor.
//
// Thread safety: a Tokens is safe for concurrent use. The Store must outlive it.
#pragma once

#include <chrono>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "idem/clock.h"
#include "idem/operations.h"
#include "idem/status.h"
#include "idem/store.h"

namespace idem {

class Tokens {
 public:
  // Tokens of `scope` (e.g. the user's id), issued for `ttl` (> 0) and restored for as long.
  Tokens(Store& store, std::string scope, Duration ttl = std::chrono::minutes(10));

  // A fresh token: at least 128 random bits, URL-safe text.
  Result<std::string> issue();
  // `consumed` for exactly one of any number of concurrent callers; `invalid` for a token
  // unknown, expired, already consumed, or issued to another scope.
  Result<ConsumeOutcome> consume(std::string token);
  // Re-arms a token of this scope after a failure, so the user can submit again.
  Result<RestoreOutcome> restore(std::string token);

  boost::asio::awaitable<Result<std::string>> async_issue();
  boost::asio::awaitable<Result<ConsumeOutcome>> async_consume(std::string token);
  boost::asio::awaitable<Result<RestoreOutcome>> async_restore(std::string token);

  const std::string& scope() const noexcept { return scope_; }
  Duration ttl() const noexcept { return ttl_; }

 private:
  Store& store_;
  std::string scope_;
  Duration ttl_;
};

}  // namespace idem
