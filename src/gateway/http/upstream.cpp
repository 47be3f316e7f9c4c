#include "gateway/http/upstream.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <span>
#include <tuple>
#include <vector>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http.hpp>

#include "gateway/http/body_parse.h"
#include "gateway/http/head_writer.h"
#include "gateway/model/forwarding.h"
#include "gateway/model/request_view.h"
#include "util/ascii.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using Steady = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaxIdle = 256;
constexpr std::size_t kResponseHeaderLimit = 64 * 1024;
constexpr std::size_t kPiece = 64 * 1024;

// A pooled connection the upstream has closed (or sent stray bytes on) is not usable. One
// non-blocking peek: no data and no end of stream means idle and open.
bool still_open(UpstreamStream& s) {
  auto& sock = s.socket();
  if (!sock.is_open()) return false;
  char c;
  const ssize_t n = ::recv(sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// A connection back in the pool for less than this is reused without the peek (a system
// call on every request under load, where connections are reused within microseconds).
// Why that is safe: what the peek catches is a close by the upstream that has already
// arrived. An upstream closes an idle keep-alive connection when its idle timer fires,
// seconds after its last response (nginx 75 s, Node.js 5 s), never within a millisecond
// of it, and the pool stops reusing a connection well before that (`until`). Any other
// close (an upstream that closes right after answering without saying
// `Connection: close`, or that restarts) can meet a request at any moment, peek or no
// peek; the peek only narrows the window. Met within this millisecond, such a close is
// classified as it always was: the request is written into a connection the upstream has
// closed, the read ends with nothing of a response, and the exchange is `broken` (outcome
// unknown), never `refused`, since from here the upstream having read the request and
// died looks the same. The answer is conservative (the key may be held as uncertain; the
// request is never sent twice), and connections idle longer keep the peek.
constexpr Steady::duration kFreshIdle = std::chrono::milliseconds(1);

// `timeout=N` of a Keep-Alive field ("timeout=5, max=100"), in seconds.
std::optional<std::chrono::seconds> keep_alive_timeout(std::string_view value) {
  for (;;) {
    const auto comma = value.find(',');
    std::string_view part = value.substr(0, comma);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    if (part.size() > 8 && util::iequals(part.substr(0, 8), "timeout=")) {
      long n = 0;
      const auto digits = part.substr(8);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec == std::errc() && n >= 0) return std::chrono::seconds(n);
    }
    if (comma == std::string_view::npos) return std::nullopt;
    value.remove_prefix(comma + 1);
  }
}

UpstreamResult failed(UpstreamResult::Kind kind, std::string error) {
  UpstreamResult r;
  r.kind = kind;
  r.error = std::move(error);
  return r;
}

// Takes the body bytes that already arrived with the head (no waiting), into `body`, up
// to `limit` bytes of body. An error: the response is malformed. `starved`: the parser
// has seen every buffered byte and wants more (body_parse.h).
beast::error_code take_buffered(ResponseTail::Parser& parser, beast::flat_buffer& in, std::string& body,
                                std::size_t limit, bool& starved) {
  while (!parser.is_done() && !starved && in.size() > 0 && body.size() < limit) {
    const std::size_t old = body.size();
    const std::size_t want = std::min(limit - old, in.size());
    body.resize(old + want);
    auto& piece = parser.get().body();
    piece.data = body.data() + old;
    piece.size = want;
    beast::error_code ec;
    const std::size_t used = parse_buffered(in, parser, starved, ec);
    body.resize(old + want - piece.size);
    if (ec) return ec;
    if (used == 0) return {};
  }
  return {};
}

// A read or write that failed after the request was (maybe) sent: the outcome is unknown.
UpstreamResult lost(const beast::error_code& ec, const char* what) {
  if (ec == beast::error::timeout)
    return failed(UpstreamResult::Kind::timeout, std::string(what) + ": timed out");
  return failed(UpstreamResult::Kind::broken, std::string(what) + ": " + ec.message());
}

// The upstream's authority for a Host field: "127.0.0.1:9000", "[::1]:9000", "backend"
// (port 80 left out).
std::string upstream_authority(const UpstreamUrl& u) {
  std::string out = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  if (u.port != 80) out += ":" + std::to_string(u.port);
  return out;
}

// The forwarding fields of a request as the upstream is to receive them (forwarding.h).
// take() is shown each field of the client's request, in order, and says whether the field
// is forwarded where it stands; the values of Forwarded, X-Forwarded-For and
// X-Forwarded-Proto are gathered (from a trusted proxy only) for the fields that are
// written after the client's.
class ForwardingValues {
 public:
  bool take(std::string_view name, std::string_view value, const RequestMeta& meta) {
    switch (forwarding_field(name)) {
      case ForwardingField::none:
        return true;
      case ForwardingField::other:
        return meta.trusted_peer;
      case ForwardingField::forwarded_for:
        if (meta.trusted_peer) xff_.push_back(value);
        return false;
      case ForwardingField::forwarded_proto:
        if (meta.trusted_peer && !value.empty()) proto_.push_back(value);
        return false;
      case ForwardingField::forwarded:
        if (meta.trusted_peer && !value.empty()) forwarded_.push_back(value);
        return false;
    }
    return true;
  }
  // The proxies' X-Forwarded-For with the peer appended.
  std::string forwarded_for(const RequestMeta& meta) const {
    return gateway::forwarded_for(xff_.views(), meta.client);
  }
  // The trusted proxy's X-Forwarded-Proto as it sent it (the protocol the client used at
  // the front of the chain); "http", this listener's, without one.
  std::string forwarded_proto() const {
    return proto_.views().empty() ? std::string("http") : joined(proto_);
  }
  // The proxies' Forwarded elements with this hop's appended (RFC 7239 §4).
  std::string forwarded(const RequestMeta& meta) const {
    std::string out = joined(forwarded_);
    if (!out.empty()) out += ", ";
    return out + forwarded_element(meta.client);
  }

 private:
  static std::string joined(const ViewList& list) {
    std::string out;
    for (std::string_view v : list.views()) {
      if (!out.empty()) out += ", ";
      out += v;
    }
    return out;
  }
  ViewList xff_, proto_, forwarded_;
};

}  // namespace

HttpRequest make_forward_request(const HttpRequest& client, const UpstreamUrl& upstream,
                                 const RequestMeta& meta) {
  HttpRequest req = client;
  prepare_forward_head(req.base(), upstream, meta);
  req.keep_alive(true);
  if (!req.body().empty() || req.method() == http::verb::post || req.method() == http::verb::put ||
      req.method() == http::verb::patch)
    req.prepare_payload();
  return req;
}

ForwardRequest forward_request(const HttpRequest& client, const UpstreamUrl& upstream,
                               const RequestMeta& meta, SetFields set) {
  // What make_forward_request does to a copy, decided field by field: strip_hop_by_hop
  // (the fields the Connection fields name, by any case), then add_forwarding_fields, the
  // fence and Expect erased, prepare_payload, and `set`. Beast's set() erases every field
  // of the name and appends the new one at the end, so the order is: the client's fields
  // that stay, then X-Forwarded-For, X-Forwarded-Proto, Forwarded, X-Request-Id (when it
  // is set), Content-Length (when the framing is recomputed), then `set`.
  const ConnectionNames listed(client);
  // make_forward_request recomputes the framing of a body and of POST, PUT and PATCH:
  // prepare_payload sets Content-Length for a body and for an empty one on POST and PUT,
  // and removes it from an empty PATCH. Other requests keep the client's.
  const bool reframed = !client.body().empty() || client.method() == http::verb::post ||
                        client.method() == http::verb::put || client.method() == http::verb::patch;
  const bool length_set = reframed && (!client.body().empty() || client.method() != http::verb::patch);

  ForwardingValues forwarding;
  bool request_id_kept = false;
  bool host_seen = false;
  ForwardRequest out{std::string(), client.body(), client.method() == http::verb::head};
  std::string& h = out.head;
  h.reserve(512);
  h += client.method_string();
  h += ' ';
  h += upstream.base_path;
  h += client.target();
  h.append(" HTTP/1.1\r\n", 11);
  for (const auto& f : client) {
    const std::string_view name = f.name_string();
    if (is_hop_by_hop(f.name()) || listed.contains(name)) continue;  // strip_hop_by_hop
    if (f.name() == http::field::expect || util::iequals(name, kFenceHeader)) continue;
    if (!forwarding.take(name, f.value(), meta)) continue;
    if (util::iequals(name, kRequestIdHeader)) {
      if (meta.request_id.generated()) continue;
      request_id_kept = true;
    }
    if (reframed && f.name() == http::field::content_length) continue;
    if (std::any_of(set.begin(), set.end(), [&](const auto& s) { return util::iequals(s.first, name); }))
      continue;
    host_seen = host_seen || f.name() == http::field::host;
    h += name;
    h.append(": ", 2);
    h += f.value();
    h.append("\r\n", 2);
  }
  auto append_field = [&h](std::string_view name, std::string_view value) {
    h += name;
    h.append(": ", 2);
    h += value;
    h.append("\r\n", 2);
  };
  if (!host_seen) append_field("Host", upstream_authority(upstream));
  append_field(kForwardedForHeader, forwarding.forwarded_for(meta));
  append_field(kForwardedProtoHeader, forwarding.forwarded_proto());
  append_field(kForwardedHeader, forwarding.forwarded(meta));
  if (!request_id_kept) append_field(kRequestIdHeader, meta.request_id.view());
  if (length_set) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, client.body().size()).ptr;
    append_field("Content-Length", std::string_view(digits, static_cast<std::size_t>(end - digits)));
  }
  for (const auto& [name, value] : set) append_field(name, value);
  h.append("\r\n", 2);
  return out;
}

void prepare_forward_head(http::request_header<>& head, const UpstreamUrl& upstream,
                          const RequestMeta& meta) {
  strip_hop_by_hop(head);
  // HTTP/1.1 requires Host (RFC 9112 §3.2); an HTTP/1.0 client may leave it out, and the
  // listener refuses an HTTP/1.1 request without one (head_checks.h).
  if (head.find(http::field::host) == head.end()) head.set(http::field::host, upstream_authority(upstream));
  add_forwarding_fields(head, meta);
  head.erase(kFenceHeader);
  head.erase(http::field::expect);
  if (!upstream.base_path.empty()) head.target(upstream.base_path + std::string(head.target()));
  head.version(11);
}

void add_forwarding_fields(http::request_header<>& head, const RequestMeta& meta) {
  // The client's values are views into the fields that are replaced: the new values are
  // made first. The fields take() keeps none of go (from a peer that is not a trusted
  // proxy, every forwarding field); three come back, set below.
  ForwardingValues forwarding;
  std::vector<std::string> replaced;
  for (const auto& f : head)
    if (!forwarding.take(f.name_string(), f.value(), meta)) replaced.emplace_back(f.name_string());
  std::string xff = forwarding.forwarded_for(meta);
  std::string xfp(forwarding.forwarded_proto());
  std::string fwd = forwarding.forwarded(meta);
  for (const std::string& name : replaced) head.erase(name);
  head.set(kForwardedForHeader, xff);
  head.set(kForwardedProtoHeader, xfp);
  head.set(kForwardedHeader, fwd);
  // The client's own id stays as sent, unless its Connection header named it away.
  if (meta.request_id.generated() || head.find(kRequestIdHeader) == head.end())
    head.set(kRequestIdHeader, meta.request_id.view());
}

RequestMeta request_meta(const http::request_header<>& head, std::string_view client,
                         const TrustedProxies* trusted) {
  std::array<std::string_view, 2> ids;
  std::size_t n = 0;
  const auto [first, last] = head.equal_range(kRequestIdHeader);
  for (auto it = first; it != last && n < ids.size(); ++it) ids[n++] = it->value();
  RequestMeta meta;
  meta.client = client;
  meta.request_id = choose_request_id(std::span<const std::string_view>(ids.data(), n));
  if (trusted && trusted->contains(client)) {
    meta.trusted_peer = true;
    ViewList xff;
    const auto [xf, xl] = head.equal_range(kForwardedForHeader);
    for (auto it = xf; it != xl; ++it) xff.push_back(it->value());
    meta.forwarded_client = resolve_client(client, xff.views(), *trusted);
    if (meta.forwarded_client == client) meta.forwarded_client.clear();
  }
  return meta;
}

HttpResponse make_client_response(HttpResponse upstream, unsigned version, bool keep_alive, bool head,
                                  bool streamed) {
  HttpResponse res = std::move(upstream);
  strip_hop_by_hop(res.base());
  res.erase(kReleaseHeader);
  res.version(version);
  res.keep_alive(keep_alive);
  if (!head && !streamed) res.prepare_payload();
  return res;
}

ResponseTail::ResponseTail(UpstreamClient& owner, UpstreamConnection conn, std::unique_ptr<Parser> parser,
                           bool starved, Steady::duration idle_timeout, Steady::duration pool_limit)
    : owner_(owner),
      conn_(std::move(conn)),
      parser_(std::move(parser)),
      starved_(starved),
      idle_timeout_(idle_timeout),
      pool_limit_(pool_limit) {}

ResponseTail::~ResponseTail() = default;  // an unfinished body: the connection closes

asio::awaitable<std::pair<beast::error_code, std::size_t>> ResponseTail::read(char* out, std::size_t size) {
  if (!conn_ || parser_->is_done()) co_return std::pair{beast::error_code{}, std::size_t{0}};
  auto& body = parser_->get().body();
  body.data = out;
  body.size = size;
  conn_->stream().expires_after(idle_timeout_);
  // Some: whatever has arrived is passed on at once (an event stream's next event).
  auto ec = co_await parse_body_some(conn_->stream(), conn_->buffer, *parser_, starved_, true);
  const std::size_t got = size - body.size;
  if (ec) {
    conn_.reset();
  } else if (parser_->is_done()) {
    owner_.settle(std::move(*conn_), *parser_, pool_limit_);
    conn_.reset();
  }
  co_return std::pair{ec, got};
}

UpstreamClient::UpstreamClient(UpstreamUrl url, Steady::duration max_idle, UpstreamTls tls)
    : url_(std::move(url)), max_idle_(max_idle), tls_(std::move(tls)) {
  if (!url_.tls) return;
  // TLS 1.2 or later; the peer's certificate checked against the CA file or the system's
  // store unless insecure_skip_verify (docs/configuration.md, "TLS to upstreams").
  ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ssl_->native_handle(), TLS1_2_VERSION);
  boost::system::error_code ec;
  if (tls_.insecure_skip_verify) {
    ssl_->set_verify_mode(asio::ssl::verify_none, ec);
    return;
  }
  ssl_->set_verify_mode(asio::ssl::verify_peer, ec);
  if (tls_.ca_file.empty())
    ssl_->set_default_verify_paths(ec);
  else
    ssl_->load_verify_file(tls_.ca_file, ec);
  if (ec)
    ssl_error_ = "tls: cannot read the CA certificates" +
                 (tls_.ca_file.empty() ? std::string(" of the system") : " in " + tls_.ca_file) + ": " +
                 ec.message();
}

UpstreamClient::~UpstreamClient() = default;

UpstreamClient::Pool& UpstreamClient::pool_of(const asio::execution_context& context) {
  for (auto& p : pools_)
    if (p.context == &context) return p;
  return pools_.emplace_back(Pool{&context, {}});
}

std::unique_ptr<UpstreamStream> UpstreamClient::checkout(const asio::execution_context& context) {
  std::lock_guard lock(mu_);
  auto& idle = pool_of(context).idle;
  const auto now = Steady::now();
  while (!idle.empty()) {
    Idle c = std::move(idle.back());
    idle.pop_back();
    if (now < c.until && (now - c.since < kFreshIdle || still_open(*c.stream))) return std::move(c.stream);
    boost::system::error_code ec;
    c.stream->socket().close(ec);
  }
  return nullptr;
}

Steady::duration UpstreamClient::pool_limit(const http::response_header<>& head) const {
  Steady::duration limit = max_idle_;
  if (auto it = head.find(http::field::keep_alive); it != head.end())
    if (auto announced = keep_alive_timeout(it->value()))
      limit = std::min<Steady::duration>(limit, *announced / 2);
  return limit;
}

void UpstreamClient::settle(UpstreamConnection conn, const ResponseTail::Parser& parser,
                            Steady::duration limit) {
  // Any doubt about where the response ended, or bytes after it: the connection closes.
  if (!parser.is_done() || !parser.keep_alive() || conn.buffer.size() != 0) return;
  if (limit <= Steady::duration::zero()) return;
  conn.stream().expires_never();
  const auto now = Steady::now();
  std::lock_guard lock(mu_);
  if (retired_) return;
  auto& idle = pool_of(asio::query(conn.stream().get_executor(), asio::execution::context)).idle;
  if (idle.size() >= kMaxIdle) return;
  idle.push_back({std::move(conn.socket), now + limit, now});
}

void UpstreamClient::close_idle() {
  std::lock_guard lock(mu_);
  pools_.clear();
}

void UpstreamClient::retire() {
  std::lock_guard lock(mu_);
  retired_ = true;
  pools_.clear();
}

asio::awaitable<UpstreamClient::Connected> UpstreamClient::connect(Steady::time_point deadline) {
  auto ex = co_await asio::this_coro::executor;
  if (auto pooled = checkout(asio::query(ex, asio::execution::context)))
    co_return Connected{UpstreamConnection{std::move(pooled), {}}, {}};
  if (!ssl_error_.empty())
    co_return Connected{std::nullopt, failed(UpstreamResult::Kind::refused, ssl_error_)};
  auto socket = ssl_ ? std::make_unique<UpstreamStream>(ex, *ssl_) : std::make_unique<UpstreamStream>(ex);
  beast::tcp_stream& stream = socket->tcp();
  boost::system::error_code cec;
  const auto address = asio::ip::make_address(url_.host, cec);
  if (!cec) {  // an IP address: no resolver round trip
    const tcp::endpoint endpoint(address, url_.port);
    stream.expires_at(deadline);
    std::tie(cec) = co_await stream.async_connect(endpoint, util::kUseTuple);
  } else {
    // The resolver has no deadline of its own: a timer on this coroutine's executor
    // cancels it (the timer's handler may outlive this frame, hence the shared owner).
    auto resolver = std::make_shared<tcp::resolver>(ex);
    asio::steady_timer limit(ex, deadline);
    limit.async_wait([resolver](const boost::system::error_code& ec) {
      if (!ec) resolver->cancel();
    });
    const std::string service = std::to_string(url_.port);
    auto [rec, endpoints] = co_await resolver->async_resolve(url_.host, service, util::kUseTuple);
    limit.cancel();
    if (rec == asio::error::operation_aborted)
      co_return Connected{std::nullopt, failed(UpstreamResult::Kind::refused, "resolve: timed out")};
    if (rec)
      co_return Connected{std::nullopt, failed(UpstreamResult::Kind::refused, "resolve: " + rec.message())};
    stream.expires_at(deadline);
    tcp::endpoint ep;
    std::tie(cec, ep) = co_await stream.async_connect(endpoints, util::kUseTuple);
  }
  if (cec)
    co_return Connected{std::nullopt, failed(UpstreamResult::Kind::refused, "connect: " + cec.message())};
  stream.socket().set_option(tcp::no_delay(true), cec);
  // Nothing of the request is sent before the certificate is checked: a failed handshake is
  // `refused` like a failed connect (docs/gateway.md, "TLS to upstreams").
  if (socket->tls())
    if (auto why = co_await handshake(*socket, deadline))
      co_return Connected{std::nullopt, failed(UpstreamResult::Kind::refused, *why)};
  co_return Connected{UpstreamConnection{std::move(socket), {}}, {}};
}

asio::awaitable<std::optional<std::string>> UpstreamClient::handshake(UpstreamStream& stream,
                                                                      Steady::time_point deadline) {
  UpstreamStream::Tls& tls = *stream.tls();
  SSL* ssl = tls.native_handle();
  const std::string& name = tls_.server_name.empty() ? url_.host : tls_.server_name;
  const bool is_ip = [&] {
    boost::system::error_code e;
    (void)asio::ip::make_address(name, e);
    return !e;
  }();
  // SNI names a host, never an address (RFC 6066, 3).
  if (!is_ip && !SSL_set_tlsext_host_name(ssl, name.c_str())) co_return "tls: cannot set the server name";
  if (!tls_.insecure_skip_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int set = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                          : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    if (set != 1) co_return "tls: cannot check the certificate for '" + name + "'";
  }
  stream.expires_at(deadline);
  auto [hec] = co_await tls.async_handshake(asio::ssl::stream_base::client, util::kUseTuple);
  if (!hec) co_return std::nullopt;
  if (hec == beast::error::timeout) co_return "tls handshake: timed out";
  const long verified = SSL_get_verify_result(ssl);
  if (verified != X509_V_OK)
    co_return "tls: the certificate of " + name +
        " is not trusted: " + X509_verify_cert_error_string(verified);
  co_return "tls handshake: " + hec.message();
}

asio::awaitable<UpstreamClient::Connected> UpstreamClient::send(const ForwardRequest& request,
                                                                Steady::time_point deadline) {
  Connected c = co_await connect(deadline);
  if (!c.conn) co_return c;
  c.conn->stream().expires_at(deadline);
  if (auto wec = co_await write_raw(c.conn->stream(), request.head, request.body))
    co_return Connected{std::nullopt, lost(wec, "send")};
  co_return c;
}

asio::awaitable<UpstreamResult> UpstreamClient::exchange(const ForwardRequest& request, Duration timeout,
                                                         std::size_t max_buffered) {
  const auto deadline = Steady::now() + timeout;
  Connected c = co_await send(request, deadline);
  if (!c.conn) co_return std::move(c.failure);
  co_return co_await receive(std::move(*c.conn), request.head_request, deadline, max_buffered);
}

asio::awaitable<UpstreamResult> UpstreamClient::receive(UpstreamConnection conn, bool head_request,
                                                        Steady::time_point deadline,
                                                        std::size_t max_buffered) {
  const auto idle_timeout = std::max<Steady::duration>(deadline - Steady::now(), std::chrono::seconds(1));
  // Interim answers (102 Processing, 103 Early Hints) precede the final one: skip them.
  // 101 is never final here: the gateway forwards no Upgrade, so it means a broken upstream.
  std::unique_ptr<ResponseTail::Parser> parser;
  for (;;) {
    parser = std::make_unique<ResponseTail::Parser>();
    parser->header_limit(kResponseHeaderLimit);
    parser->body_limit(boost::none);
    if (head_request) parser->skip(true);
    conn.stream().expires_at(deadline);
    auto [ec, n] = co_await http::async_read_header(conn.stream(), conn.buffer, *parser, util::kUseTuple);
    if (ec) co_return lost(ec, "receive");
    const unsigned status = parser->get().result_int();
    if (status == 101) co_return failed(UpstreamResult::Kind::broken, "the upstream switched protocols");
    if (status >= 200 || status < 100) break;
  }

  // The body, up to one byte more than the caller buffers (to know it is larger); a caller
  // that buffers nothing gets the head as soon as it arrives (an event stream's, say),
  // with what of the body came with it. What already arrived is taken without waiting.
  std::string body;
  bool starved = false;  // the head's read ended at the head's end, not wanting more
  if (auto ec =
          take_buffered(*parser, conn.buffer, body, max_buffered > 0 ? max_buffered + 1 : kPiece, starved))
    co_return lost(ec, "receive");
  while (max_buffered > 0 && !parser->is_done() && body.size() <= max_buffered) {
    const std::size_t room = max_buffered + 1 - body.size();
    const auto remaining = parser->content_length();  // of a Content-Length body, still unread
    std::size_t want = remaining ? static_cast<std::size_t>(std::min<std::uint64_t>(*remaining, kPiece))
                                 : std::clamp<std::size_t>(body.size(), 4096, kPiece);
    want = std::max<std::size_t>(1, std::min(want, room));
    const std::size_t old = body.size();
    body.resize(old + want);
    auto& piece = parser->get().body();
    piece.data = body.data() + old;
    piece.size = want;
    conn.stream().expires_at(deadline);
    // The piece is filled before the body shrinks back to what arrived: each resize
    // zero-fills it, and a read brings at most body_parse.h's read size.
    beast::error_code ec;
    while (!ec && piece.size > 0 && !parser->is_done())
      ec = co_await parse_body_some(conn.stream(), conn.buffer, *parser, starved, true);
    body.resize(old + want - piece.size);
    if (ec) co_return lost(ec, "receive");
  }

  UpstreamResult r;
  r.kind = UpstreamResult::Kind::response;
  // The head moves out of the parser (a tail's parser needs only its state from here on).
  const Steady::duration limit = pool_limit(parser->get());
  r.response.base() = std::move(parser->get().base());
  r.response.body() = std::move(body);
  if (parser->is_done())
    settle(std::move(conn), *parser, limit);
  else
    r.tail = std::make_unique<ResponseTail>(*this, std::move(conn), std::move(parser), starved, idle_timeout,
                                            limit);
  strip_hop_by_hop(r.response.base());
  co_return r;
}

}  // namespace idem::gateway
