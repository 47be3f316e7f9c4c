// A tiny, deliberately non-idempotent HTTP service for the quickstart: every POST /orders
// creates a new order and every POST /payments a new charge, so without idem a retried
// request creates a second one. It answers what it saw: the new order or charge number
// and the Idempotency-Key and Idempotency-Fence the gateway forwarded.
//   orders_service [PORT]   (default 9000; 127.0.0.1 only)
// GET /orders and GET /payments answer how many were created so far.
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

std::atomic<int> orders{0};
std::atomic<int> payments{0};

std::string field(const http::request<http::string_body>& req, const char* name) {
  auto it = req.find(name);
  return it == req.end() ? std::string() : std::string(it->value());
}

http::response<http::string_body> answer(const http::request<http::string_body>& req) {
  http::response<http::string_body> res;
  res.version(req.version());
  res.keep_alive(req.keep_alive());
  res.set(http::field::content_type, "application/json");
  const std::string path(req.target().substr(0, req.target().find('?')));
  std::atomic<int>* counter = path == "/orders" ? &orders : path == "/payments" ? &payments : nullptr;
  const std::string what = path == "/orders" ? "order" : "charge";
  if (counter && req.method() == http::verb::post) {
    const int n = ++*counter;
    boost::json::object o{{what, n},
                          {"idempotency_key", field(req, "Idempotency-Key")},
                          {"fence", field(req, "Idempotency-Fence")},
                          {"request", req.body()}};
    res.result(http::status::created);
    res.set(http::field::location, path + "/" + std::to_string(n));
    res.body() = boost::json::serialize(o);
  } else if (counter && req.method() == http::verb::get) {
    res.result(http::status::ok);
    res.body() = boost::json::serialize(boost::json::object{{"created", counter->load()}});
  } else {
    res.result(http::status::not_found);
    res.body() = R"({"error":"not found"})";
  }
  res.prepare_payload();
  return res;
}

void serve(tcp::socket socket) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    beast::error_code ec;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    auto res = answer(req);
    http::write(socket, res, ec);
    if (ec || !res.keep_alive()) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned short port = argc > 1 ? static_cast<unsigned short>(std::stoi(argv[1])) : 9000;
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::fprintf(stderr, "orders_service: listening on 127.0.0.1:%u\n", acceptor.local_endpoint().port());
  for (;;) {
    tcp::socket socket(ioc);
    acceptor.accept(socket);
    std::thread(serve, std::move(socket)).detach();
  }
}
