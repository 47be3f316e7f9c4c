// HTTP/1.1 for the shop, with Boost.Beast: one thread per connection, blocking reads and
// writes, keep-alive. The gateway in front keeps a small pool of upstream connections,
// so a thread per connection is all this needs.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include "shop_service.h"

namespace shop {

// Serves until SIGTERM or SIGINT; then stops accepting, lets every connection finish the
// request it is handling (idle keep-alive connections are closed), and returns.
// Throws boost::system::system_error when it cannot listen on `endpoint`.
void serve_http(Shop& shop, const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace shop
