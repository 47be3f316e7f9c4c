// The whole gateway on raw bytes (docs/fuzzing.md): an in-process `idem serve`
// (served_gateway.h) in front of an in-process upstream that records what it gets
// (recording_upstream.h). Each input is written to one client connection in segments, 1 ms
// apart: when its first byte is 0x01–0x08, that byte + 1 writes of about equal size (the
// byte itself is not sent); any other input is cut at up to three places drawn from a hash
// of its bytes (so an input is always sent the same way, and the fuzzer meets every head and
// body cut anywhere). Then the client half-closes and reads until the gateway closes.
// Invariants, each a finding when broken:
//   1. no crash, sanitizer report, or exception out of a connection;
//   2. everything the upstream receives parses strictly as HTTP/1.1 (recording_upstream.h);
//   3. the upstream receives no more requests than the reference reading of the input
//      finds, and what it receives is, in order, a subsequence of those requests — same
//      method, target (an absolute-form target as its origin-form) and body: no request
//      smuggled in a body, no body cut or extended. The reference reading (http1.h:
//      read_requests) reads the bytes in order, lenient wherever RFC 9112 lets a recipient
//      be and stopping where every conformant server must refuse; each leniency is the one
//      accepting alternative to refusing, so it reads at least the requests any conformant
//      server reads, each the same way — a sound upper bound, exact where framing is clear;
//   4. no field the input sent only in a trailer section reaches the upstream as a header,
//      nor stands in for a missing one: no token is issued to a request whose head lacks
//      the subject header X-User-Id;
//   5. the route-matching rules: no method that is a standard one in other case, no target
//      with '#', or a path with '\', %2F or a dot segment (also encoded) reaches the
//      upstream; a POST whose path normalizes to a protected route's arrives protected
//      (one Idempotency-Fence, an Idempotency-Key); a fence only ever on a POST;
//   6. the client gets well-formed HTTP responses, at most one final response more than
//      the reference reading has requests (the answer to the one that stopped it); each
//      is 200 (upstream or replay), 201 (a token) or an error of idem's own, which is
//      application/problem+json with its status and a urn:idem:problem: type;
//   7. an HTTP/2 preface gets an answer, not a silent close;
//   8. the gateway closes within 5 s of the client's end of input and settles within 3 s (its
//      timeouts are 1 s).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "fuzz/fuzz_check.h"
#include "fuzz/http1.h"
#include "fuzz/recording_upstream.h"
#include "fuzz/served_gateway.h"

namespace {

using idem::fuzz::check;
using idem::fuzz::escaped;
using idem::fuzz::Received;
namespace http1 = idem::fuzz::http1;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

// A header key route, a template key route, a lock route with a path parameter and a token
// route, all POST; every other request is unmatched and proxied.
constexpr const char* kConfig = R"(
defaults:
  wait: 0s
  upstream_timeout: 1s
  max_body: 4KiB
tokens:
  subject: header:X-User-Id
routes:
  - name: orders
    match: { method: POST, path: /orders }
    key: header:Idempotency-Key
  - name: pay
    match: { method: POST, path: /pay }
    key: "pay:{json.out_trade_no}"
  - name: deduct
    match: { method: POST, path: "/skus/{sku}/deduct" }
    key: "stock:{path.sku}"
    mode: lock
  - name: forms
    match: { method: POST, path: /forms/* }
    key: token
)";

constexpr auto kCloseDeadline = std::chrono::seconds(5);  // with kSettleDeadline, under -timeout=10
constexpr auto kSettleDeadline = std::chrono::seconds(3);

struct Harness {
  idem::fuzz::RecordingUpstream upstream;
  idem::fuzz::ServedGateway gateway{kConfig, upstream.port()};
};

// ---- the client ------------------------------------------------------------------------

struct Exchange {
  std::string answer;  // every byte the gateway sent
  bool reset = false;  // the read ended with a reset (unread data at the gateway's close)
};

// FNV-1a, then splitmix64 steps: the cuts an input is sent with, the same on every run.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<std::string_view> pieces_of(std::string_view input) {
  if (!input.empty() && input[0] >= 0x01 && input[0] <= 0x08) {
    const std::size_t n = static_cast<std::size_t>(input[0]) + 1;
    input.remove_prefix(1);
    std::vector<std::string_view> out;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t from = input.size() * i / n, to = input.size() * (i + 1) / n;
      if (to > from) out.push_back(input.substr(from, to - from));
    }
    return out;
  }
  std::uint64_t state = 0xcbf29ce484222325ull;
  for (unsigned char c : input) state = (state ^ c) * 0x100000001b3ull;
  std::vector<std::size_t> cuts;
  if (input.size() > 1)
    for (std::uint64_t k = next_random(state) % 4; k > 0; --k)
      cuts.push_back(1 + next_random(state) % (input.size() - 1));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<std::string_view> out;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    out.push_back(input.substr(from, cut - from));
    from = cut;
  }
  out.push_back(input.substr(from));
  return out;
}

Exchange exchange(unsigned short port, const std::vector<std::string_view>& pieces) {
  Exchange ex;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  check(fd >= 0, "socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno == EINTR) {  // the connection completes on its own: wait for it
    pollfd p{fd, POLLOUT, 0};
    while (::poll(&p, 1, 5000) < 0 && errno == EINTR) {
    }
    int err = 0;
    socklen_t len = sizeof err;
    rc = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 ? 0 : -1;
  }
  check(rc == 0, "cannot connect to the gateway");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Closing with a reset leaves no TIME_WAIT behind: thousands of inputs a minute would
  // otherwise use up the ephemeral ports.
  linger no_linger{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof no_linger);

  const auto deadline = Clock::now() + kCloseDeadline;
  const auto wait = [&](short events) {
    for (;;) {  // libFuzzer's SIGALRM (its -timeout watchdog) interrupts poll
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd, events, 0};
      const int n = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
      if (n >= 0 || errno != EINTR) return n > 0;
    }
  };
  const auto read_some = [&] {
    std::array<char, 16 * 1024> buf;
    ssize_t n;
    do {
      n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0) ex.answer.append(buf.data(), static_cast<std::size_t>(n));
    if (n < 0 && errno == ECONNRESET) ex.reset = true;
    return n;
  };
  bool open = true;  // the gateway may still take bytes
  for (std::size_t i = 0; i < pieces.size() && open; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::string_view rest = pieces[i];
    while (!rest.empty() && open) {
      const ssize_t n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        rest.remove_prefix(static_cast<std::size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // The gateway does not read: read its answers meanwhile, so neither side blocks.
        check(wait(POLLOUT | POLLIN), "the gateway took neither bytes nor answered for 5 s");
        if (read_some() == 0) open = false;
      } else {
        open = false;  // closed or reset by the gateway
      }
    }
  }
  ::shutdown(fd, SHUT_WR);
  for (;;) {
    const ssize_t n = read_some();
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) break;
    if (n < 0)
      check(wait(POLLIN), "the gateway kept the connection open 5 s after the client's end of input",
            escaped(ex.answer));
  }
  ::close(fd);
  return ex;
}

// ---- what the upstream received --------------------------------------------------------

// RFC 3986 §3.1: what may stand before "://" in an absolute-form target. Written apart
// from the gateway's own check on purpose: an oracle sharing its code would share its bugs.
bool is_scheme(std::string_view s) {
  static constexpr std::string_view kAlpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  static const std::string kRest = std::string(kAlpha) + "0123456789+-.";
  return !s.empty() && kAlpha.find(s.front()) != std::string_view::npos &&
         s.find_first_not_of(kRest) == std::string_view::npos;
}

// The origin-form the gateway forwards a target in (absolute-form reduced to its path and
// query, "?q" as "/?q"); other targets as they are. Only a scheme before "://" makes a
// target absolute-form: "?q=http://h/orders" is a query.
bool same_target(std::string_view read, std::string_view sent) {
  if (read == sent) return true;
  if (read.starts_with('?')) return sent == "/" + std::string(read);
  const std::size_t scheme = read.find("://");
  if (scheme == std::string_view::npos || !is_scheme(read.substr(0, scheme))) return false;
  const std::size_t rest = read.find_first_of("/?", scheme + 3);
  if (rest == std::string_view::npos) return sent == "/";
  const std::string_view tail = read.substr(rest);
  return tail.starts_with('?') ? sent == "/" + std::string(tail) : sent == tail;
}

bool matches(const http1::ReadRequest& r, const Received& got) {
  return r.method == got.method && same_target(r.target, got.target) && (!r.body || *r.body == got.body);
}

std::string describe(const Received& r) {
  return r.method + " " + escaped(r.target, 200) + " body " + escaped(r.body, 200);
}

std::string describe(const http1::Reading& reading) {
  std::string out = "reference reading (" + escaped(reading.stop, 200) + "):";
  for (const auto& r : reading.requests)
    out += " [" + r.method + " " + escaped(r.target, 200) + " body " +
           (r.body ? escaped(*r.body, 200) : "?") + "]";
  return out;
}

constexpr std::string_view kStandardMethods[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                 "CONNECT", "OPTIONS", "TRACE", "PATCH"};

int hex(char c) { return http1::hex_value(c); }

bool unreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

std::string decode(std::string_view s, bool only_unreserved) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      const char c = static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      if (!only_unreserved || unreserved(c)) {
        out += c;
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  while (path.starts_with('/')) {
    path.remove_prefix(1);
    const std::size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash);
  }
  return out;
}

// A segment as route matching reads it: ";parameters" dropped, encoded unreserved
// characters decoded, ASCII case folded.
std::string route_segment(std::string_view raw) {
  return http1::lowered(decode(raw.substr(0, raw.find(';')), true));
}

// The path's segments normalized for route matching, in the two orders the steps may take
// (empty segments dropped after ";parameters" are, or before): a request counts as on a
// protected route only when both readings put it there, so no ordering is assumed.
std::array<std::vector<std::string>, 2> route_readings(std::string_view path) {
  std::array<std::vector<std::string>, 2> out;
  for (std::string_view raw : split_path(path)) {
    std::string s = route_segment(raw);
    if (!s.empty()) out[0].push_back(s);
    if (!raw.empty()) out[1].push_back(std::move(s));
  }
  return out;
}

bool protected_path(const std::vector<std::string>& s) {
  if (s.size() == 1 && (s[0] == "orders" || s[0] == "pay")) return true;
  if (s.size() == 3 && s[0] == "skus" && !s[1].empty() && s[2] == "deduct") return true;
  return s.size() >= 2 && s[0] == "forms" && !s[1].empty();
}

void check_received(const Received& got) {
  for (std::string_view m : kStandardMethods) {
    check(!http1::iequals(got.method, m) || got.method == m,
          "the upstream got a standard method in other case:", describe(got));
  }
  const std::string_view target = got.target;
  const std::string_view path = target.substr(0, target.find('?'));
  check(target.find('#') == std::string_view::npos, "the upstream got a target with '#':", describe(got));
  check(path.find('\\') == std::string_view::npos, "the upstream got a path with '\\':", describe(got));
  const std::string lowered_path = http1::lowered(path);
  check(lowered_path.find("%2f") == std::string::npos, "the upstream got a path with %2F:", describe(got));
  for (std::string_view segment : split_path(path)) {
    const std::string s = decode(segment, false);
    check(s != "." && s != "..", "the upstream got a path with a dot segment:", describe(got));
  }
  const std::size_t fences = got.count("idempotency-fence");
  check(fences <= 1, "the upstream got Idempotency-Fence more than once:", describe(got));
  check(fences == 0 || got.method == "POST",
        "the upstream got Idempotency-Fence on a request no route protects:", describe(got));
  const auto readings = route_readings(path);
  if (got.method == "POST" && protected_path(readings[0]) && protected_path(readings[1])) {
    check(fences == 1 && got.count("idempotency-key") == 1,
          "a request to a protected route reached the upstream unprotected:", describe(got));
  }
}

// Fields the gateway itself may set on a forwarded request (its framing, the key and fence,
// the forwarding fields), whatever names a client used in a trailer.
bool set_by_gateway(std::string_view name) {
  static constexpr std::string_view kNames[] = {"content-length",  "transfer-encoding", "host",
                                                "connection",      "idempotency-key",   "idempotency-fence",
                                                "x-forwarded-for", "x-forwarded-proto", "x-request-id"};
  for (std::string_view n : kNames)
    if (n == name) return true;
  return false;
}

void check_upstream(const http1::Reading& reading, const std::vector<Received>& received) {
  check(received.size() <= reading.requests.size(), "the upstream got more requests than the input holds:",
        std::to_string(received.size()) + " > " + describe(reading));
  std::size_t next = 0;
  for (const Received& got : received) {
    while (next < reading.requests.size() && !matches(reading.requests[next], got)) ++next;
    check(next < reading.requests.size(),
          "the upstream got a request the input does not hold:", describe(got) + "; " + describe(reading));
    ++next;
    check_received(got);
    for (const auto& [name, value] : got.fields) {
      if (set_by_gateway(name)) continue;
      check(!reading.trailer_names.contains(name) || reading.head_names.contains(name),
            "a trailer field reached the upstream as a header:", name + " in " + describe(got));
    }
  }
}

// ---- what the client received ----------------------------------------------------------

// `head`: the answer to a HEAD, which has no body to check.
void check_problem(const http::response<http::string_body>& res, const std::string& raw, bool head) {
  const auto type = res[http::field::content_type];
  check(type == "application/problem+json",
        "an error of idem's own that is not application/problem+json:", raw);
  if (head) return;
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(res.body(), ec);
  check(!ec && v.is_object(), "a problem body that is not a JSON object:", raw);
  const auto& o = v.as_object();
  const auto* t = o.if_contains("type");
  const auto* s = o.if_contains("status");
  const auto* title = o.if_contains("title");
  check(t && t->is_string() && t->as_string().starts_with("urn:idem:problem:"),
        "a problem without its type:", raw);
  check(s && s->is_int64() && s->as_int64() == res.result_int(),
        "a problem whose status is not the response's:", raw);
  check(title && title->is_string(), "a problem without a title:", raw);
}

using ResponseParser = http::response_parser<http::string_body>;

// One response from the front of `bytes`; `skip`: it answers a HEAD and has no body.
std::unique_ptr<ResponseParser> parse_response(std::string_view bytes, bool skip, std::size_t& n,
                                               boost::beast::error_code& ec) {
  auto parser = std::make_unique<ResponseParser>();
  parser->header_limit(1024 * 1024);
  parser->body_limit(64 * 1024 * 1024);
  parser->skip(skip);
  parser->eager(true);
  n = parser->put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  if (!ec && !parser->is_done() && parser->is_header_done() && parser->need_eof())
    parser->put_eof(ec);  // a body delimited by the close
  return parser;
}

void check_answers(const http1::Reading& reading, const Exchange& ex) {
  std::string_view rest = ex.answer;
  std::size_t finals = 0;
  while (!rest.empty()) {
    // Answers come in the order of the requests. The answer to a HEAD has no body, unless
    // the gateway could not read the request as one (a 400 for a head the reference reads
    // leniently): then what follows it is its body, not the next response.
    const bool head = finals < reading.requests.size() && reading.requests[finals].method == "HEAD";
    std::size_t n = 0;
    boost::beast::error_code ec;
    auto parser = parse_response(rest, head, n, ec);
    if (head && !ec && parser->is_done() && n < rest.size() && !rest.substr(n).starts_with("HTTP/"))
      parser = parse_response(rest, false, n, ec);
    if (ec == http::error::need_more || (!ec && !parser->is_done())) {
      // Cut short: allowed only when a reset destroyed the rest of the answer.
      check(ex.reset, "the gateway closed in the middle of a response:", escaped(rest));
      break;
    }
    check(!ec, "the client got a malformed response:", ec.message() + ": " + escaped(rest));
    const std::string raw = escaped(rest.substr(0, n));
    rest.remove_prefix(n);
    const auto& res = parser->get();
    check(res.version() == 11 || res.version() == 10, "a response that is not HTTP/1.x:", raw);
    check(res.count(http::field::content_length) <= 1, "a response with Content-Length twice:", raw);
    const unsigned status = res.result_int();
    if (status < 200) {
      check(status == 100, "an interim response other than 100 Continue:", raw);
      continue;
    }
    // The subject of a token comes from the head: a trailer (merged into the head by a
    // careless parser) must not supply a missing X-User-Id.
    if (finals < reading.requests.size()) {
      const http1::ReadRequest& req = reading.requests[finals];
      if (req.method == "POST" && req.target.substr(0, req.target.find('?')) == "/_idem/tokens" &&
          !req.names.contains("x-user-id"))
        check(status != 201, "a token issued without X-User-Id in the request head:", raw);
    }
    ++finals;
    if (status >= 400) {
      check(status < 600, "a status beyond 5xx:", raw);
      check_problem(res, raw, head);
    } else {
      check(status == 200 || status == 201, "a status neither the upstream's, a token's nor an error:", raw);
    }
  }
  check(finals <= reading.requests.size() + 1, "the client got more answers than the input holds requests:",
        std::to_string(finals) + "; " + describe(reading));
}

}  // namespace

// libFuzzer flags this target runs with unless told otherwise (they go first, so flags
// on the command line override them). Its threads make both of libFuzzer's per-input
// extras cost ten times the input itself: the leak check after every input that
// allocated more than it freed (the gateway's and upstream's threads allocate across
// inputs), and the entropic schedule, which updates the frequency of each of the many
// features every input touches. Leaks are still reported when the process exits.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  static std::vector<char*> args;
  static char detect_leaks[] = "-detect_leaks=0";
  static char entropic[] = "-entropic=0";
  args.assign(*argv, *argv + *argc);
  args.insert(args.begin() + (args.empty() ? 0 : 1), {detect_leaks, entropic});
  args.push_back(nullptr);
  *argc = static_cast<int>(args.size()) - 1;
  *argv = args.data();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Harness& h = *new Harness();  // for the whole process: threads and ports are costly
  const std::vector<std::string_view> pieces = pieces_of({reinterpret_cast<const char*>(data), size});
  std::string input;
  for (std::string_view p : pieces) input += p;

  h.gateway.forget();
  const Exchange ex = exchange(h.gateway.port(), pieces);
  // Every request the gateway took from this connection has been answered (or abandoned)
  // once it is idle and no message to the upstream is half-sent.
  const auto settle_by = Clock::now() + kSettleDeadline;
  while (!(h.gateway.idle() && h.upstream.partial() == 0)) {
    check(Clock::now() < settle_by, "the gateway did not settle within 3 s of closing the connection");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const std::vector<Received> received = h.upstream.take();

  const http1::Reading reading = http1::read_requests(input);
  static const bool verbose = std::getenv("IDEM_FUZZ_VERBOSE") != nullptr;  // for triage
  if (verbose) {
    std::fprintf(stderr, "%s\nupstream received %zu:\n", describe(reading).c_str(), received.size());
    for (const Received& r : received) std::fprintf(stderr, "  %s\n", describe(r).c_str());
    std::fprintf(stderr, "client got%s:\n%s\n", ex.reset ? " (reset)" : "", escaped(ex.answer, 4096).c_str());
  }
  check_upstream(reading, received);
  check_answers(reading, ex);
  if (input.starts_with("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") && !ex.reset)
    check(!ex.answer.empty(), "an HTTP/2 preface closed without an answer");
  return 0;
}
