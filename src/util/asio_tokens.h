// The completion token of the awaited Asio operations whose errors are expected: `auto [ec,
// n] = co_await op(..., util::kUseTuple)` gives the error as a value, checked inline,
// instead of an exception (STYLE.md; Beast's example/advanced/server-flex-awaitable).
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace idem::util {

inline constexpr auto kUseTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace idem::util
