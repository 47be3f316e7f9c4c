#include "gateway/http/http_reply.h"

#include <algorithm>

#include <boost/json.hpp>

#include "core/ascii.h"
#include "core/units.h"

namespace idem::gateway {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when a Connection field of `fields` lists `name` (RFC 9110 §7.6.1).
bool listed_in_connection(const http::fields& fields, std::string_view name) {
  const auto [first, last] = fields.equal_range(http::field::connection);
  for (auto it = first; it != last; ++it) {
    for (std::string_view v = it->value(); !v.empty();) {
      const auto comma = v.find(',');
      if (iequals(trim(v.substr(0, comma)), name)) return true;
      v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
    }
  }
  return false;
}

}  // namespace

HttpResponse problem_response(unsigned status, std::string_view name, std::string_view title,
                              std::string_view detail, unsigned version, bool keep_alive) {
  boost::json::object o;
  o["type"] = "urn:idem:problem:" + std::string(name);
  o["title"] = title;
  o["status"] = status;
  o["detail"] = detail;
  HttpResponse res{static_cast<http::status>(status), version};
  res.set(http::field::content_type, "application/problem+json");
  res.set(http::field::cache_control, "no-store");
  res.body() = boost::json::serialize(o);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

HttpResponse problem_response(Problem p, std::string_view detail, unsigned version, bool keep_alive,
                              std::optional<Duration> retry_after) {
  auto res = problem_response(static_cast<unsigned>(problem_status(p)), problem_name(p), problem_title(p),
                              detail, version, keep_alive);
  if (retry_after) res.set(http::field::retry_after, std::to_string(retry_after_seconds(*retry_after)));
  return res;
}

HttpResponse json_response(http::status status, std::string body, unsigned version, bool keep_alive) {
  HttpResponse res{status, version};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

void strip_hop_by_hop(http::fields& fields) {
  // One pass, no copies (it runs on every forwarded request and response). The fields a
  // Connection field names are looked up while the Connection fields, which hold those
  // names, are still there: they go last.
  const bool has_connection = fields.find(http::field::connection) != fields.end();
  for (auto it = fields.begin(); it != fields.end();) {
    const std::string_view name = it->name_string();
    const bool drop = it->name() != http::field::connection &&
                      (is_hop_by_hop(name) || (has_connection && listed_in_connection(fields, name)));
    it = drop ? fields.erase(it) : std::next(it);
  }
  fields.erase(http::field::connection);
}

}  // namespace idem::gateway
