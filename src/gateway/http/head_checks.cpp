#include "gateway/http/head_checks.h"

#include <array>
#include <iterator>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "gateway/model/request_view.h"
#include "util/ascii.h"
#include "util/percent.h"

namespace idem::gateway {
namespace http = boost::beast::http;

namespace {

bool is_standard_method_in_another_case(std::string_view method) {
  static constexpr std::array<std::string_view, 9> kMethods = {
      "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  for (std::string_view m : kMethods)
    if (m != method && util::iequals(m, method)) return true;
  return false;
}

// `byte` percent-encoded anywhere in `text` ('/': "%2F" or "%2f").
bool has_encoded(std::string_view text, char byte) {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (util::escaped_byte(text, i) == static_cast<unsigned char>(byte)) return true;
  return false;
}

// RFC 3986 §3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
bool is_scheme(std::string_view s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') return false;
  return true;
}

}  // namespace

std::optional<std::string> origin_form(std::string_view target, bool admin) {
  std::string_view t = target;
  // Absolute-form only when what comes before "://" is a scheme: "?q=http://h/orders" is a
  // query, forwarded as "/?q=http://h/orders", never as "/orders".
  const auto scheme = t.find("://");
  if (scheme != std::string_view::npos && is_scheme(t.substr(0, scheme))) {
    const auto slash = t.find_first_of("/?", scheme + 3);
    t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
  }
  std::string out(t);
  if (out.starts_with('?')) out.insert(0, "/");
  if (!out.starts_with('/')) return std::nullopt;
  std::string_view path = target_path(out);
  if (out.find_first_of("#\\") != std::string::npos ||
      (!admin && (has_encoded(path, '/') || has_encoded(path, '\\'))))
    return std::nullopt;
  while (!path.empty()) {
    path.remove_prefix(1);
    const auto next = path.find('/');
    const std::string_view raw = path.substr(0, next);
    // On the admin listener a segment is data (a record's scope or key) that the admin
    // listener decodes itself: only a literal dot segment is one there, so a scope or key
    // such as "..;x" (sent "..%3Bx") or ".." (sent "%2E%2E") can be named.
    std::string segment = admin ? std::string(raw) : *util::percent_decode(raw, util::BadPercent::keep);
    segment = segment.substr(0, segment.find(';'));
    if (segment == "." || segment == "..") return std::nullopt;
    path = next == std::string_view::npos ? std::string_view{} : path.substr(next);
  }
  return out;
}

HeadRefusal another_version_refusal() {
  return HeadRefusal{Problem::version_not_supported, "this gateway speaks HTTP/1.1 (and 1.0) only", 11};
}

std::optional<HeadRefusal> refuse_head(http::request_header<>& head, bool admin) {
  const unsigned version = head.version();
  if (version != 10 && version != 11) return another_version_refusal();
  auto invalid = [version](std::string detail) {
    return HeadRefusal{Problem::request_invalid, std::move(detail), version};
  };
  if (head.method() == http::verb::unknown && is_standard_method_in_another_case(head.method_string()))
    return invalid("methods are case-sensitive: send the standard spelling in upper case");
  // RFC 9112 §6.3: only "chunked" frames a request body here; any other coding (or a list)
  // could be read as a different body length by the upstream or a proxy in between.
  const auto [te, te_end] = head.equal_range(http::field::transfer_encoding);
  if (te != te_end && (std::next(te) != te_end || !util::iequals(te->value(), "chunked")))
    return invalid("Transfer-Encoding must be exactly \"chunked\"");
  // RFC 9112 §6.1: in an HTTP/1.0 message a Transfer-Encoding means faulty framing.
  if (te != te_end && version == 10) return invalid("Transfer-Encoding in an HTTP/1.0 request");
  // One Content-Length, one number: a repeated or listed length is read differently by
  // different servers on the way.
  const auto [cl, cl_end] = head.equal_range(http::field::content_length);
  if (cl != cl_end && (std::next(cl) != cl_end || cl->value().find(',') != std::string_view::npos))
    return invalid("more than one Content-Length");
  const auto [host, host_end] = head.equal_range(http::field::host);
  if (host != host_end && std::next(host) != host_end) return invalid("more than one Host field");
  // RFC 9112 §3.2: a server must refuse an HTTP/1.1 request without Host. It is forwarded
  // as HTTP/1.1, which needs one; an HTTP/1.0 request may lack it and is given the
  // upstream's (prepare_forward_head).
  if (host == host_end && version == 11 && !admin) return invalid("an HTTP/1.1 request needs a Host field");
  if (head.method() != http::verb::options || head.target() != "*") {
    auto target = origin_form(head.target(), admin);
    if (!target)
      return invalid(
          "the request target must be a path without '#', '\\', an encoded '/' or '\\', or dot segments");
    if (*target != head.target()) head.target(*target);
  }
  return std::nullopt;
}

bool speaks_another_version(std::string_view data) {
  const std::string_view line = data.substr(0, data.find("\r\n"));
  if (line.size() < 8) return false;
  const std::string_view v = line.substr(line.size() - 8);
  return v.starts_with("HTTP/") && v[5] >= '0' && v[5] <= '9' && v[5] != '1' && v[6] == '.' && v[7] >= '0' &&
         v[7] <= '9';
}

}  // namespace idem::gateway
