// What the files of the request pipeline share (gateway.cpp, lock_mode.cpp, tokens.cpp,
// request_log.cpp): small helpers and the store-call observer. Internal to pipeline/.
#pragma once

#include <chrono>
#include <cstddef>

#include <boost/asio/awaitable.hpp>

#include "gateway/http/upstream.h"
#include "gateway/model/problem.h"
#include "gateway/pipeline/gateway.h"
#include "idem/status.h"

namespace idem::gateway {

// What is read of a response that is passed on but never stored, before the rest streams.
inline constexpr std::size_t kStreamedPrefix = 64 * 1024;

inline Duration since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0);
}

// The problem of an exchange that got no answer.
inline Problem failure_problem(UpstreamResult::Kind k) {
  return k == UpstreamResult::Kind::timeout ? Problem::upstream_timeout : Problem::upstream_unavailable;
}

template <class T>
boost::asio::awaitable<Result<T>> Gateway::observe(const char* op, boost::asio::awaitable<Result<T>> call) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<T> r = co_await std::move(call);
  observed(op, since(t0), r ? Status::ok() : r.status());
  if (r) runner_.store_answered();  // settles retried in the background go at once
  co_return r;
}

}  // namespace idem::gateway
