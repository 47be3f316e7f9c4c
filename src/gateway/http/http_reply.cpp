#include "gateway/http/http_reply.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/json.hpp>

#include "gateway/model/request_meta.h"
#include "gateway/model/units.h"
#include "util/ascii.h"

namespace idem::gateway {

bool is_hop_by_hop(http::field f) noexcept {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
      return true;
    default:
      return false;
  }
}

HttpResponse problem_response(Problem p, std::string_view detail, unsigned version, bool keep_alive,
                              std::optional<Duration> retry_after) {
  const auto status = static_cast<unsigned>(problem_status(p));
  boost::json::object o;
  o["type"] = "urn:idem:problem:" + std::string(problem_name(p));
  o["title"] = problem_title(p);
  o["status"] = status;
  o["detail"] = detail;
  // A fresh id until the client listener names the request (name_problem_instance).
  o["instance"] = problem_instance(RequestId::generate().view());
  o["retryable"] = problem_retryable(p);
  HttpResponse res{static_cast<http::status>(status), version};
  res.set(http::field::content_type, "application/problem+json");
  res.set(http::field::cache_control, "no-store");
  res.body() = boost::json::serialize(o);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  if (retry_after) res.set(http::field::retry_after, std::to_string(retry_after_seconds(*retry_after)));
  // RFC 6750, 3: a 401 for a bearer token names the scheme and why (docs/http.md, "Every problem").
  if (p == Problem::credentials_invalid)
    res.set(http::field::www_authenticate, R"(Bearer error="invalid_token")");
  return res;
}

void name_problem_instance(HttpResponse& res, std::string_view request_id) {
  if (res[http::field::content_type] != "application/problem+json" || res.count(kReplayedHeader) != 0) return;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(res.body(), ec);
  if (ec || !v.is_object()) return;
  boost::json::object& o = v.get_object();
  const boost::json::value* type = o.if_contains("type");
  if (type == nullptr || !type->is_string() || !type->get_string().starts_with("urn:idem:problem:") ||
      !o.contains("instance"))
    return;
  o["instance"] = problem_instance(request_id);
  res.body() = boost::json::serialize(o);
  // Content-Length changes in place: the fields keep the order problem_response gave them.
  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& f : res) fields.emplace_back(f.name_string(), f.value());
  for (const auto& f : fields) res.erase(f.first);
  const std::string length = std::to_string(res.body().size());
  for (const auto& [name, value] : fields)
    res.insert(name, util::iequals(name, "Content-Length") ? length : value);
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

ConnectionNames::ConnectionNames(const http::fields& fields) {
  for_each_connection_name(fields, [&](std::string_view name) { names_.push_back(name); });
  const std::span<std::string_view> names = names_.views();
  std::sort(names.begin(), names.end(), util::iless);
}

bool ConnectionNames::contains(std::string_view name) const noexcept {
  const std::span<const std::string_view> names = names_.views();
  return std::binary_search(names.begin(), names.end(), name, util::iless);
}

void strip_hop_by_hop(http::fields& fields) {
  // One pass, no copies (it runs on every forwarded request and response). The listed names
  // are views into the Connection fields: those go last.
  const ConnectionNames listed(fields);
  for (auto it = fields.begin(); it != fields.end();) {
    const bool drop = it->name() != http::field::connection &&
                      (is_hop_by_hop(it->name()) || listed.contains(it->name_string()));
    it = drop ? fields.erase(it) : std::next(it);
  }
  fields.erase(http::field::connection);
}

}  // namespace idem::gateway
