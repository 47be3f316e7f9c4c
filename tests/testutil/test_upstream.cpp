// A small HTTP/1.1 upstream for the gateway's end-to-end tests (Envoy's FakeUpstream, as a
// process). It counts executions per Idempotency-Key and misbehaves on request, through
// request headers:
//   X-Test-Status: N       answer with status N (default 200, or 201 for POST)
//   X-Test-Delay-Ms: N     execute, then wait N ms before answering
//   X-Test-Drop: before    close the connection without executing
//   X-Test-Drop: after     execute, then close the connection without answering
//   X-Test-Slow-Ms: N      send the head, wait N ms, then send the body
//   X-Test-Body-Size: N    answer a body of N 'x' bytes instead of the JSON echo
//   X-Test-Close: 1        answer (keep-alive as usual), then close the connection
//   X-Test-Interim: 1      send "102 Processing" and "103 Early Hints" before the answer
//   X-Test-Stream: N,MS    answer a chunked body of N events "data: i\n\n", MS ms apart
//   X-Test-Hop: NAME       answer with "Connection: NAME" and a field NAME (hop-by-hop)
//   X-Test-Answers: A | B  a service whose answer changes: execution n of the key answers
//                          the n-th body of the " | "-separated list (the last one from
//                          then on), as JSON when it starts with '{', else as text/plain
//   X-Test-Release: V      answer with "Idempotency-Release: V"
//   X-Test-Split: N,MS     answer kSplitAnswer (chunked, with a trailer) in two writes, the
//                          first its bytes before offset N of its body, MS ms apart
// POST /mcp (and every path below it: /mcp-x) is an MCP tool server (JSON-RPC 2.0): `tools/list` answers one
// tool; `tools/call` executes under the Idempotency-Key received (else "mcp:" + the tool's name) and answers
// {"result":{"content":[...],"structuredContent":{"execution":n,"arguments":..}}} with the request's `id` as
// received; the tool "fail" answers a JSON-RPC error every time, "flaky" an error on its first execution and
// a result from then on, "stream" its result as one text/event-stream event; X-Test-Delay-Ms delays the
// answer after executing. A notification (no `id`) is answered 202 without a body. GET /_count?key=K answers
// the number of executions of key K. GET /_seen?from=N answers, as a JSON array, every other request received
// from the N-th on (0-based): its method, target, fields ([name, value] in order), body size, and when it
// arrived (at_us: microseconds of the system clock, comparable across upstream processes).
// GET /_status/KEY is a status endpoint (docs/http.md, "When the service can say what
// happened"): KEY executed → 200 `Idempotency-Outcome: done`, `Idempotency-Original-Status:
// 201` and {"key":KEY,"execution":n,"resolved":true}; never executed → 404
// `Idempotency-Outcome: none`. With ?mode=error it answers 500, with ?mode=bare a 404
// without the field (a service without the endpoint), with ?mode=slow it answers after 3 s.
// It executes nothing.
// The JSON echo names the key, the execution number, the Idempotency-Fence received (or
// "") and the request body.
// Usage: test_upstream [PORT] [--idle-close-ms MS [--announce]]; prints the bound port on
// stdout. With --idle-close-ms, a request that arrives on a connection idle for MS or
// more is not served: the connection is closed unread, as when a server's keep-alive
// timer fires just as a request is on its way (Node.js and nginx close idle connections
// so); a race made deterministic. With --announce, answers say Keep-Alive: timeout=S.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

std::mutex mu;
std::map<std::string, int> executions;  // guarded by mu
boost::json::array seen;                // guarded by mu
long idle_close_ms = 0;
bool announce_idle = false;

int execute(const std::string& key);
int count(const std::string& key);
void answer_status(const http::request<http::string_body>& req, std::string rest,
                   http::response<http::string_body>& res);
long header_number(const http::request<http::string_body>& req, const char* name, long fallback);
void sleep_ms(long ms);

// POST /mcp (see the top of the file).
http::response<http::string_body> answer_mcp(const http::request<http::string_body>& req) {
  http::response<http::string_body> res{http::status::ok, 11};
  res.keep_alive(req.keep_alive());
  res.set(http::field::content_type, "application/json");
  boost::system::error_code ec;
  boost::json::value body = boost::json::parse(req.body(), ec);
  boost::json::object* call = body.if_object();
  if (ec || call == nullptr) {
    res.body() = R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"not one JSON-RPC call"}})";
    res.prepare_payload();
    return res;
  }
  if (!call->contains("id")) {
    res.result(http::status::accepted);
    res.erase(http::field::content_type);
    res.prepare_payload();
    return res;
  }
  boost::json::object answer{{"jsonrpc", "2.0"}, {"id", call->at("id")}};
  const boost::json::string method = call->contains("method") && call->at("method").is_string()
                                         ? call->at("method").get_string()
                                         : boost::json::string();
  if (method == "tools/list") {
    answer["result"] =
        boost::json::parse(R"({"tools":[{"name":"create_ticket","inputSchema":{"type":"object"}}]})");
  } else if (method == "tools/call") {
    const boost::json::object* params = call->contains("params") ? call->at("params").if_object() : nullptr;
    const boost::json::value* name = params ? params->if_contains("name") : nullptr;
    const std::string tool = name && name->is_string() ? std::string(name->get_string()) : "";
    auto key_it = req.find("Idempotency-Key");
    const int n = execute(key_it == req.end() ? "mcp:" + tool : std::string(key_it->value()));
    sleep_ms(header_number(req, "X-Test-Delay-Ms", 0));
    if (tool == "fail" || (tool == "flaky" && n == 1)) {
      answer["error"] = {{"code", -32603},
                         {"message", "the tool failed (execution " + std::to_string(n) + ")"}};
    } else {
      const boost::json::value* args = params ? params->if_contains("arguments") : nullptr;
      answer["result"] = {
          {"content", {{{"type", "text"}, {"text", tool + " ran (execution " + std::to_string(n) + ")"}}}},
          {"structuredContent", {{"execution", n}, {"arguments", args ? *args : boost::json::value()}}}};
    }
    if (tool == "stream") {
      res.set(http::field::content_type, "text/event-stream");
      res.body() = "event: message\ndata: " + boost::json::serialize(answer) + "\n\n";
      res.prepare_payload();
      return res;
    }
  } else {
    answer["error"] = {{"code", -32601}, {"message", "no such method"}};
  }
  res.body() = boost::json::serialize(answer);
  if (auto coding = req.find("X-Test-Encoding"); coding != req.end())
    res.set(http::field::content_encoding, coding->value());
  res.prepare_payload();
  return res;
}

void record(const http::request<http::string_body>& req) {
  boost::json::array fields;
  for (const auto& f : req) fields.push_back(boost::json::array{f.name_string(), f.value()});
  boost::json::object o{{"method", req.method_string()},
                        {"target", req.target()},
                        {"fields", std::move(fields)},
                        {"body_size", req.body().size()},
                        {"at_us", std::chrono::duration_cast<std::chrono::microseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count()}};
  std::lock_guard lock(mu);
  seen.push_back(std::move(o));
}

std::string seen_from(std::size_t from) {
  std::lock_guard lock(mu);
  boost::json::array out;
  for (std::size_t i = from; i < seen.size(); ++i) out.push_back(seen[i]);
  return boost::json::serialize(out);
}

int execute(const std::string& key) {
  std::lock_guard lock(mu);
  return ++executions[key];
}

int count(const std::string& key) {
  std::lock_guard lock(mu);
  auto it = executions.find(key);
  return it == executions.end() ? 0 : it->second;
}

void answer_status(const http::request<http::string_body>& req, std::string rest,
                   http::response<http::string_body>& res) {
  std::string mode;
  if (const auto q = rest.find("?mode="); q != std::string::npos) {
    mode = rest.substr(q + 6);
    rest.resize(q);
  }
  const std::string key = rest;  // the test keys need no percent-decoding
  if (mode == "slow") sleep_ms(3000);
  if (mode == "error") {
    res.result(500);
    res.body() = "status store down";
  } else if (mode == "bare") {
    res.result(404);
    res.body() = "no such path";
  } else if (const int n = count(key); n > 0) {
    res.result(200);
    res.set("Idempotency-Outcome", "done");
    res.set("Idempotency-Original-Status", "201");
    res.set(http::field::content_type, "application/json");
    res.body() =
        boost::json::serialize(boost::json::object{{"key", key}, {"execution", n}, {"resolved", true}});
  } else {
    res.result(404);
    res.set("Idempotency-Outcome", "none");
  }
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
}

long header_number(const http::request<http::string_body>& req, const char* name, long fallback) {
  auto it = req.find(name);
  if (it == req.end()) return fallback;
  return std::stol(std::string(it->value()));
}

// X-Test-Split's answer: its body is "hello" in two chunks, then a trailer.
constexpr const char* kSplitAnswer =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    "2\r\nhe\r\n3;ext=1\r\nllo\r\n0\r\nX-Trailer: t\r\n\r\n";

void sleep_ms(long ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void serve(tcp::socket& socket) {
  beast::flat_buffer buffer;
  beast::error_code ec;
  auto idle_since = std::chrono::steady_clock::now();
  for (;;) {
    if (idle_close_ms > 0 && buffer.size() == 0) {
      pollfd p{socket.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, -1) < 0) return;
      if (std::chrono::steady_clock::now() - idle_since >= std::chrono::milliseconds(idle_close_ms)) return;
    }
    http::request_parser<http::string_body> parser;
    parser.body_limit(64ull * 1024 * 1024);
    parser.header_limit(64 * 1024);  // the gateway forwards heads up to its own 16 KiB and more
    http::read(socket, buffer, parser, ec);
    if (ec) return;
    http::request<http::string_body> req = parser.release();
    const std::string target(req.target());
    if (target.starts_with("/_seen?from=")) {
      http::response<http::string_body> res{http::status::ok, 11};
      res.body() = seen_from(std::stoul(target.substr(12)));
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(socket, res, ec);
      if (ec) return;
      continue;
    }
    if (!target.starts_with("/_count")) record(req);
    if (target.starts_with("/mcp") && req.method() == http::verb::post) {
      http::write(socket, answer_mcp(req), ec);
      if (ec || !req.keep_alive()) return;
      continue;
    }
    http::response<http::string_body> res;
    res.version(11);
    res.keep_alive(req.keep_alive());
    if (target.starts_with("/_status/")) {
      answer_status(req, target.substr(9), res);
      http::write(socket, res, ec);
      if (ec || !req.keep_alive()) return;
      continue;
    }
    if (target.starts_with("/_count?key=")) {
      res.result(200);
      res.body() = std::to_string(count(target.substr(12)));
      res.prepare_payload();
      http::write(socket, res, ec);
      if (ec) return;
      continue;
    }
    auto key_it = req.find("Idempotency-Key");
    const std::string key = key_it == req.end() ? target : std::string(key_it->value());
    auto drop = req.find("X-Test-Drop");
    if (drop != req.end() && drop->value() == "before") return;
    const int n = execute(key);
    if (drop != req.end() && drop->value() == "after") return;
    if (req.count("X-Test-Interim")) {
      const std::string interim =
          "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; "
          "rel=preload\r\n\r\n";
      asio::write(socket, asio::buffer(interim), ec);
      if (ec) return;
    }
    sleep_ms(header_number(req, "X-Test-Delay-Ms", 0));

    res.result(static_cast<unsigned>(
        header_number(req, "X-Test-Status", req.method() == http::verb::post ? 201 : 200)));
    if (auto stream = req.find("X-Test-Stream"); stream != req.end()) {
      const std::string spec(stream->value());
      const long events = std::stol(spec);
      const long gap = std::stol(spec.substr(spec.find(',') + 1));
      res.set(http::field::content_type, "text/event-stream");
      res.chunked(true);
      http::response_serializer<http::string_body> sr(res);
      http::write_header(socket, sr, ec);
      for (long i = 0; i < events && !ec; ++i) {
        sleep_ms(gap);
        const std::string event = "data: " + std::to_string(i) + "\n\n";
        asio::write(socket, http::make_chunk(asio::buffer(event)), ec);
      }
      if (!ec) asio::write(socket, http::make_chunk_last(), ec);
      if (ec || !req.keep_alive()) return;
      continue;
    }
    if (auto split = req.find("X-Test-Split"); split != req.end()) {
      const std::string spec(split->value());
      const std::string_view answer = kSplitAnswer;
      const std::size_t at = std::min(answer.find("\r\n\r\n") + 4 + std::stoul(spec), answer.size());
      asio::write(socket, asio::buffer(answer.substr(0, at)), ec);
      sleep_ms(std::stol(spec.substr(spec.find(',') + 1)));
      if (!ec) asio::write(socket, asio::buffer(answer.substr(at)), ec);
      if (ec || !req.keep_alive()) return;
      continue;
    }
    if (auto hop = req.find("X-Test-Hop"); hop != req.end()) {
      res.set(http::field::connection, hop->value());
      res.set(hop->value(), "hop-by-hop");
    }
    const long size = header_number(req, "X-Test-Body-Size", -1);
    if (auto release = req.find("X-Test-Release"); release != req.end())
      res.set("Idempotency-Release", release->value());
    if (auto answers = req.find("X-Test-Answers"); answers != req.end()) {
      std::string_view list = answers->value();
      for (int i = 1; i < n; ++i) {
        const auto bar = list.find(" | ");
        if (bar == std::string_view::npos) break;
        list.remove_prefix(bar + 3);
      }
      res.body() = std::string(list.substr(0, list.find(" | ")));
      res.set(http::field::content_type, res.body().starts_with('{') ? "application/json" : "text/plain");
    } else if (size >= 0) {
      res.body() = std::string(static_cast<std::size_t>(size), 'x');
      res.set(http::field::content_type, "text/plain");
    } else {
      auto fence = req.find("Idempotency-Fence");
      boost::json::object o{{"key", key},
                            {"execution", n},
                            {"fence", fence == req.end() ? "" : std::string(fence->value())},
                            {"body", req.body()}};
      res.body() = boost::json::serialize(o);
      res.set(http::field::content_type, "application/json");
    }
    res.set(http::field::location, "/things/" + std::to_string(n));
    if (announce_idle) res.set(http::field::keep_alive, "timeout=" + std::to_string(idle_close_ms / 1000));
    res.set(http::field::set_cookie, "session=secret");
    res.set("X-Upstream", "test");
    res.prepare_payload();
    const long slow = header_number(req, "X-Test-Slow-Ms", 0);
    if (slow > 0) {
      http::response_serializer<http::string_body> sr(res);
      http::write_header(socket, sr, ec);
      sleep_ms(slow);
      if (!ec) http::write(socket, sr, ec);
    } else {
      http::write(socket, res, ec);
    }
    if (ec || !req.keep_alive() || req.count("X-Test-Close")) return;
    idle_since = std::chrono::steady_clock::now();
  }
}

}  // namespace

int main(int argc, char** argv) {
  asio::io_context ioc;
  unsigned short port = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--idle-close-ms" && i + 1 < argc)
      idle_close_ms = std::stol(argv[++i]);
    else if (arg == "--announce")
      announce_idle = true;
    else
      port = static_cast<unsigned short>(std::stoi(arg));
  }
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::printf("%u\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  for (;;) {
    tcp::socket socket(ioc);
    beast::error_code ec;
    acceptor.accept(socket, ec);
    if (ec) continue;
    std::thread([s = std::move(socket)]() mutable {
      serve(s);
      beast::error_code ignored;
      s.shutdown(tcp::socket::shutdown_both, ignored);
    }).detach();
  }
}
