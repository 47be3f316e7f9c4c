#include "gateway/http/http_reply.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <vector>

#include <boost/json.hpp>

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
  HttpResponse res{static_cast<http::status>(status), version};
  res.set(http::field::content_type, "application/problem+json");
  res.set(http::field::cache_control, "no-store");
  res.body() = boost::json::serialize(o);
  res.keep_alive(keep_alive);
  res.prepare_payload();
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
  // One pass, no copies (it runs on every forwarded request and response). The names the
  // Connection fields list are views into them: those fields go last.
  std::array<std::string_view, 8> names;
  std::size_t n = 0;
  bool many = false;
  for_each_connection_name(fields, [&](std::string_view name) {
    if (n < names.size())
      names[n++] = name;
    else
      many = true;
  });
  if (many) {
    // A long list: copy it and erase by name (never the Connection fields, which go last).
    std::vector<std::string> copied;
    for_each_connection_name(fields, [&](std::string_view name) { copied.emplace_back(name); });
    for (const auto& name : copied)
      if (!util::iequals(name, "connection")) fields.erase(name);
    n = 0;
  }
  const std::span<const std::string_view> listed(names.data(), n);
  for (auto it = fields.begin(); it != fields.end();) {
    const std::string_view name = it->name_string();
    const bool drop =
        it->name() != http::field::connection &&
        (is_hop_by_hop(it->name()) || std::any_of(listed.begin(), listed.end(), [&](std::string_view l) {
           return util::iequals(l, name);
         }));
    it = drop ? fields.erase(it) : std::next(it);
  }
  fields.erase(http::field::connection);
}

}  // namespace idem::gateway
