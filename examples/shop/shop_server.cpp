#include "shop_server.h"

#include <sys/socket.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace shop {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

// The connection threads, and the sockets to wake when the server stops. A socket is
// unregistered before it is closed, so a shutdown() never hits a reused descriptor.
struct Connections {
  std::mutex mu;
  bool stopping = false;
  std::uint64_t next_id = 0;
  std::map<std::uint64_t, int> sockets;
  std::map<std::uint64_t, std::thread> threads;
  std::vector<std::uint64_t> finished;  // threads that returned, to join

  void reap() {  // with mu held
    for (auto id : finished) {
      threads.at(id).join();
      threads.erase(id);
    }
    finished.clear();
  }
};

Request to_request(const http::request<http::string_body>& req) {
  Request r;
  r.method = std::string(req.method_string());
  const auto target = req.target();
  r.path = std::string(target.substr(0, target.find('?')));
  r.body = req.body();
  if (auto it = req.find("Idempotency-Key"); it != req.end()) r.idempotency_key = std::string(it->value());
  if (auto it = req.find("Idempotency-Fence"); it != req.end())
    r.idempotency_fence = std::string(it->value());
  if (auto it = req.find("X-Pay-Signature"); it != req.end()) r.pay_signature = std::string(it->value());
  return r;
}

http::response<http::string_body> to_response(Reply reply, unsigned version, bool keep_alive) {
  http::response<http::string_body> res;
  res.version(version);
  res.result(reply.status);
  res.set(http::field::content_type, reply.content_type);
  for (auto& [name, value] : reply.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = std::move(reply.body);
  res.prepare_payload();
  return res;
}

// The request was not HTTP (as opposed to: the peer closed, the socket failed).
bool malformed(const beast::error_code& ec) {
  return ec != http::error::end_of_stream &&
         ec.category() == http::make_error_code(http::error::bad_target).category();
}

void serve_connection(Shop& shop, tcp::socket& socket, Connections& conns) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(1 << 20);
    beast::error_code ec;
    http::read(socket, buffer, parser, ec);
    if (ec == http::error::body_limit) {
      auto res = to_response(problem(413, "body-too-large", "the body is larger than 1 MiB"), 11, false);
      http::write(socket, res, ec);
      return;
    }
    if (ec) {
      if (malformed(ec)) {
        auto res =
            to_response(problem(400, "bad-request", "malformed HTTP request: " + ec.message()), 11, false);
        http::write(socket, res, ec);
      }
      return;
    }
    const auto& req = parser.get();
    Reply reply = shop.handle(to_request(req));
    bool stopping;
    {
      std::lock_guard lock(conns.mu);
      stopping = conns.stopping;
    }
    auto res = to_response(std::move(reply), req.version(), req.keep_alive() && !stopping);
    http::write(socket, res, ec);
    if (ec || !res.keep_alive()) return;
  }
}

void accept_loop(Shop& shop, tcp::acceptor& acceptor, Connections& conns) {
  acceptor.async_accept([&](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      std::lock_guard lock(conns.mu);
      conns.reap();
      if (conns.stopping) return;
      const auto id = conns.next_id++;
      conns.sockets[id] = socket.native_handle();
      conns.threads[id] = std::thread([&shop, &conns, id, s = std::move(socket)]() mutable {
        serve_connection(shop, s, conns);
        {
          std::lock_guard done(conns.mu);
          conns.sockets.erase(id);
          conns.finished.push_back(id);
        }
        beast::error_code ignored;
        s.close(ignored);
      });
    } else {
      std::fprintf(stderr, "shop: accept: %s\n", ec.message().c_str());
    }
    accept_loop(shop, acceptor, conns);
  });
}

}  // namespace

void serve_http(Shop& shop, const tcp::endpoint& endpoint) {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen();
  Connections conns;
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code ec, int) {
    if (ec) return;
    beast::error_code ignored;
    acceptor.close(ignored);
    std::lock_guard lock(conns.mu);
    conns.stopping = true;
    // A blocked read returns end-of-stream; a request being handled still gets its answer.
    for (auto& [id, fd] : conns.sockets) ::shutdown(fd, SHUT_RD);
  });
  accept_loop(shop, acceptor, conns);
  ioc.run();

  std::map<std::uint64_t, std::thread> threads;
  {
    std::lock_guard lock(conns.mu);
    threads.swap(conns.threads);
  }
  for (auto& [id, t] : threads) t.join();
}

}  // namespace shop
