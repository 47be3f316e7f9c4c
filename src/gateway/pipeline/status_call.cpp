// The status endpoint asked about an unknown outcome (docs/http.md, "When the service can
// say what happened"): one bounded GET to the route's upstream while this gateway still
// holds the claim, so at most one call per key is in flight and whatever it leads to is
// fenced by the claim.
#include <array>
#include <charconv>
#include <cstdio>

#include <boost/json.hpp>

#include "gateway/http/header_fields.h"
#include "gateway/pipeline/gateway.h"
#include "util/rfc3339.h"

namespace idem::gateway {
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

std::optional<std::string_view> field(const HttpResponse& res, std::string_view name) {
  const auto it = res.find(name);
  if (it == res.end()) return std::nullopt;
  return std::string_view(it->value());
}

}  // namespace

asio::awaitable<Gateway::Resolution> Gateway::ask_status(const Route& route, const Identity& id,
                                                         const RequestMeta& meta, Fence fence) {
  const StatusEndpoint& endpoint = *route.policy.status;
  HttpRequest ask{http::verb::get, status_target(endpoint.path, id.key, fence), 11};
  // The route's upstream under the config in force (one always exists for a route the
  // config accepted; should a reload have taken it, nothing is known).
  UpstreamClient* upstream = upstream_of(&route);
  if (!upstream) co_return Resolution{};
  const UpstreamUrl& url = upstream->url();
  const bool v6 = url.host.find(':') != std::string::npos;
  ask.set(http::field::host, (v6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port));
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, fence).ptr;
  const std::array<std::pair<std::string_view, std::string_view>, 2> set{
      {{"Idempotency-Key", id.key},
       {kFenceHeader, std::string_view(digits, static_cast<std::size_t>(end - digits))}}};
  const ForwardRequest fwd = forward_request(ask, url, meta, set);
  // Within the claim's lease, which is not renewed during a takeover's call.
  const Duration timeout = std::min(endpoint.timeout, route.policy.lease / 2);
  UpstreamResult up = co_await upstream->exchange(fwd, timeout, route.policy.max_result);

  Resolution r;
  if (up.kind == UpstreamResult::Kind::response && !up.tail) {
    const StatusAnswer a = read_status_answer(up.response.result_int(), field(up.response, kOutcomeHeader),
                                              field(up.response, kOriginalStatusHeader));
    r.reading = a.reading;
    if (a.reading == StatusReading::done) {
      up.response.erase(kOutcomeHeader);
      up.response.erase(kOriginalStatusHeader);
      up.response.result(a.original_status);
      r.answer = std::move(up);
    }
  }
  metrics_.count_resolution(route.name, to_string(r.reading));
  // The audit line of an automatic resolution (docs/observability.md, "Metrics"): who
  // (the gateway, for the request of `peer`), which record and fence, what was decided.
  json::object line{{"audit", "record.resolve"},
                    {"time", util::rfc3339(std::chrono::time_point_cast<std::chrono::microseconds>(
                                               std::chrono::system_clock::now()),
                                           util::SubSecond::milliseconds)},
                    {"token", "(status endpoint)"},
                    {"peer", meta.origin()},
                    {"route", route.name},
                    {"scope", id.scope},
                    {"key", id.record_key},
                    {"fence", fence},
                    {"decision", to_string(r.reading)}};
  if (up.kind != UpstreamResult::Kind::response) line["error"] = up.error;
  std::string text = json::serialize(line);
  std::fprintf(stderr, "%s\n", text.c_str());
  metrics_.note_audit(std::move(text));
  co_return r;
}

}  // namespace idem::gateway
