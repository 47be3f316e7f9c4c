// Routes (the `routes` of a config): which requests are protected and how. A route matches by
// method and path pattern; the first matching route wins; unmatched requests are proxied
// untouched. Pure; a loaded route table is immutable and safe to share between threads.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/model/jsonrpc.h"
#include "gateway/model/key.h"
#include "gateway/model/key_template.h"
#include "gateway/model/policy.h"
#include "gateway/model/request_view.h"
#include "idem/limits.h"
#include "idem/status.h"

namespace idem::gateway {

// `match.path`: "/orders" (exact), "/forms/*" (every path below "/forms/", the trailing
// "/*" only), "/skus/{sku}/deduct" ({name} segments capture path parameters).
// Matching errs on the side of protection (docs/gateway.md, "Route matching"): a request
// path is compared the way common upstream frameworks route it, so that no spelling of a
// protected path reaches the upstream unprotected: ASCII case folded, repeated '/' merged,
// a trailing '/' ignored, ";parameters" in a segment ignored, percent-encoding decoded.
// Captured parameters keep their case (two ids that differ only by case are two ids).
// "/*" matches every path. The HTTP layer refuses targets that frameworks disagree on
// (an encoded '/', '\', dot segments) before they get here.
//
// With `format_suffix` (`match.format_suffix`), the last segment also matches followed by a
// `.format` suffix, as Rails' implicit `(.:format)` and Spring MVC's suffix pattern match
// (up to 5.2) route it: a literal last segment `deduct` matches `deduct.json` (and
// `deduct.a.b`, as Spring does), and a parameter last segment captures its value without
// the suffix, up to its last '.' (`/orders/A-1.json` gives `id = A-1`; Spring's reading,
// and Rails' wherever Rails routes the path at all).
class PathPattern {
 public:
  // invalid_argument naming the reason: not starting with '/', a '?' or '#', a '*' other
  // than a trailing "/*", a '{' or '}' that does not enclose a whole segment, a parameter
  // name that is not letters, digits and '_', a parameter named twice, `format_suffix`
  // on a prefix pattern (which matches every path below it anyway).
  static Result<PathPattern> parse(std::string_view text, bool format_suffix = false);

  PathPattern() = default;  // matches nothing

  const std::string& text() const noexcept { return text_; }
  bool is_prefix() const noexcept { return prefix_; }
  bool format_suffix() const noexcept { return format_suffix_; }
  bool has_param(std::string_view name) const noexcept;

  // The captured parameters when `path` (the path of an origin-form target, still
  // percent-encoded, without the query) matches; nullopt otherwise.
  std::optional<PathParams> match(std::string_view path) const;

  // True when every path `other` matches, this matches too — told only where it is sure:
  // the same format_suffix; a `{param}` or the same literal in each of the segments they
  // share; as many segments when this is exact (and `other` exact too), more or as many
  // when this is a prefix ("/*" covers everything). False otherwise, even where it might
  // cover. For `idem check` (shadowed routes).
  bool covers(const PathPattern& other) const noexcept;

 private:
  struct Segment {
    bool param = false;
    std::string text;  // a literal segment (decoded), or the parameter's name
  };
  std::string text_;
  std::vector<Segment> segments_;
  bool prefix_ = false;
  bool format_suffix_ = false;
};

enum class Mode { replay, lock };

// `key`: header:NAME (a client-chosen key, default header:Idempotency-Key), token (a
// one-time token sent as Idempotency-Token), or a template ("pay:{json.out_trade_no}").
struct KeyRule {
  enum class Kind { header, token, templated };
  Kind kind = Kind::header;
  std::string header = "Idempotency-Key";  // kind == header
  KeyTemplate key_template;                // kind == templated
};

inline constexpr std::string_view kTokenHeader = "Idempotency-Token";

struct Route {
  std::string name;  // unique; the `route` label of metrics and logs
  // The key space its records live in (docs/gateway.md, "Key spaces"): `key_space`, by
  // default the name. Routes naming the same key space share records; no other route can
  // reach them, whatever key a client sends.
  std::string key_space;
  std::vector<std::string> methods;  // upper case; a request's method must be one of them
  PathPattern path;
  KeyRule key;
  bool required = true;  // false: a request without a key is forwarded unprotected
  Mode mode = Mode::replay;
  // `mode: jsonrpc` (docs/configuration.md, "JSON-RPC routes"): a replay route whose body is a
  // JSON-RPC 2.0 call; only the listed methods are protected, the fingerprint is the call's,
  // a replay carries the repeat's `id`. The key and subject are read once the body is.
  std::optional<JsonRpcRule> jsonrpc;
  // defaults overridden by the route's own keys. On a token route, policy.subject is
  // tokens.subject, so the identity code reads the subject in one place.
  Policy policy;
  // `upstream: NAME`: the one of Config::upstreams its requests go to; "" for the default
  // `upstream` (docs/configuration.md, "Upstreams").
  std::string upstream;
};

// The longest key space: the longest key a record is stored under, "<key_space>:<key>" with
// a key of kMaxKeyLength, is what every store holds (idem/limits.h).
inline constexpr std::size_t kMaxKeySpaceLength = kMaxStoredKeyBytes - 1 - kMaxKeyLength;
static_assert(kMaxKeySpaceLength == 64, "messages and docs say a key space is 1-64 characters");

// True when `name` can name a key space: 1-64 of A-Z a-z 0-9 . _ -
bool is_key_space(std::string_view name) noexcept;

// The key a record is stored under: "<key_space>:<key>", where `key` is the key as the
// route rendered it (the client's key, the token or the template's result).
std::string stored_key(std::string_view key_space, std::string_view key);

// The route protecting requests when the config has no `routes`: POST and PATCH on every
// path, with an optional (required: false) Idempotency-Key header, named "default" (and
// so is its key space).
Route default_route(const Policy& defaults);

struct RouteMatch {
  const Route* route;  // points into the table given to match_route
  PathParams params;
};

// The first route whose methods include `method` and whose path pattern matches the path
// of `target` (origin-form; the query is ignored); nullopt when none does.
std::optional<RouteMatch> match_route(std::span<const Route> routes, std::string_view method,
                                      std::string_view target);

}  // namespace idem::gateway
