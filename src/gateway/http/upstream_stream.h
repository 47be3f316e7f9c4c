// A connection to an upstream: plain TCP, or TLS over TCP for an https:// upstream
// (docs/gateway.md, "TLS to upstreams"). One type for both, so the exchange, the pool and
// the relay are written once: reads and writes go to the TLS layer when there is one, the
// deadlines (expires_at, ...) and the socket are the TCP stream's under it.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace idem::gateway {

class UpstreamStream {
 public:
  using Tcp = boost::beast::tcp_stream;
  using Tls = boost::beast::ssl_stream<Tcp>;
  using executor_type = Tcp::executor_type;

  // Plain TCP.
  explicit UpstreamStream(const executor_type& ex) : plain_(std::make_unique<Tcp>(ex)) {}
  // TLS under `context`; the handshake is the caller's (tls()).
  UpstreamStream(const executor_type& ex, boost::asio::ssl::context& context)
      : tls_(std::make_unique<Tls>(ex, context)) {}

  executor_type get_executor() { return tcp().get_executor(); }
  Tcp& tcp() { return tls_ ? tls_->next_layer() : *plain_; }
  Tls* tls() { return tls_.get(); }  // null for plain TCP

  Tcp::socket_type& socket() { return tcp().socket(); }
  template <class Time>
  void expires_at(Time t) {
    tcp().expires_at(t);
  }
  template <class Duration>
  void expires_after(Duration d) {
    tcp().expires_after(d);
  }
  void expires_never() { tcp().expires_never(); }

  template <class Buffers, class Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const Buffers& b) {
          if (tls_)
            tls_->async_read_some(b, std::move(handler));
          else
            plain_->async_read_some(b, std::move(handler));
        },
        token, buffers);
  }
  template <class Buffers, class Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const Buffers& b) {
          if (tls_)
            tls_->async_write_some(b, std::move(handler));
          else
            plain_->async_write_some(b, std::move(handler));
        },
        token, buffers);
  }

 private:
  std::unique_ptr<Tcp> plain_;
  std::unique_ptr<Tls> tls_;
};

}  // namespace idem::gateway
