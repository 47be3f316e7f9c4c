#include "gateway/http/http_reply.h"

#include <algorithm>
#include <vector>

#include <boost/json.hpp>

#include "core/units.h"

namespace idem::gateway {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
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
  // Fields the Connection header names are hop-by-hop for this message too.
  std::vector<std::string> named;
  // (equal_range: several Connection fields need not be adjacent.)
  const auto [first, last] = fields.equal_range(http::field::connection);
  for (auto it = first; it != last; ++it) {
    std::string_view v = it->value();
    while (!v.empty()) {
      auto comma = v.find(',');
      named.push_back(trim(v.substr(0, comma)));
      v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
    }
  }
  for (const auto& n : named)
    if (!n.empty()) fields.erase(n);
  std::vector<std::string> drop;
  for (const auto& f : fields)
    if (is_hop_by_hop(f.name_string())) drop.emplace_back(f.name_string());
  for (const auto& n : drop) fields.erase(n);
}

}  // namespace idem::gateway
