// Tokens: a thin wrapper over the one-time token operations.
#include "idem/tokens.h"

#include <utility>

#include <boost/asio/use_awaitable.hpp>

#include "idem/async.h"

namespace idem {

namespace asio = boost::asio;

Tokens::Tokens(Store& store, std::string scope, Duration ttl)
    : store_(store), scope_(std::move(scope)), ttl_(ttl) {}

Result<std::string> Tokens::issue() { return store_.issue_token(IssueTokenArgs{scope_, ttl_}); }

Result<ConsumeOutcome> Tokens::consume(std::string token) {
  return store_.consume_token(TokenArgs{scope_, std::move(token)});
}

Result<RestoreOutcome> Tokens::restore(std::string token) {
  return store_.restore_token(RestoreTokenArgs{scope_, std::move(token), ttl_});
}

asio::awaitable<Result<std::string>> Tokens::async_issue() {
  IssueTokenArgs args{scope_, ttl_};
  auto r = co_await async_issue_token(store_, std::move(args), asio::use_awaitable);
  co_return r;
}

asio::awaitable<Result<ConsumeOutcome>> Tokens::async_consume(std::string token) {
  TokenArgs args{scope_, std::move(token)};
  auto r = co_await async_consume_token(store_, std::move(args), asio::use_awaitable);
  co_return r;
}

asio::awaitable<Result<RestoreOutcome>> Tokens::async_restore(std::string token) {
  RestoreTokenArgs args{scope_, std::move(token), ttl_};
  auto r = co_await async_restore_token(store_, std::move(args), asio::use_awaitable);
  co_return r;
}

}  // namespace idem
