// The request as the core sees it: a view over what the HTTP layer has read, plus the
// lookups key templates and fingerprints need (headers, query, urlencoded form, JSON body).
// No I/O, no Asio or Beast types, so every decision is testable without sockets.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/model/canonical_json.h"
#include "util/ascii.h"

#include "idem/status.h"

namespace idem::gateway {

struct HeaderField {
  std::string_view name;
  std::string_view value;  // without surrounding whitespace, as HTTP parsers deliver it
};

// Views only: whatever they point to must outlive the view.
struct RequestView {
  std::string_view method;               // case-sensitive, as sent ("POST")
  std::string_view target;               // origin-form as sent: "/orders?x=1"
  std::span<const HeaderField> headers;  // in arrival order; names compare case-insensitively
  std::string_view body;                 // empty until the HTTP layer has read it
};

// `{name}` segments captured by a route's path pattern, percent-decoded, in pattern order.
using PathParams = std::vector<std::pair<std::string, std::string>>;

// The path of an origin-form target (everything before '?') and its query (after it, or "").
std::string_view target_path(std::string_view target) noexcept;
std::string_view target_query(std::string_view target) noexcept;

// How many fields are named `name` (ASCII case-insensitive).
std::size_t count_headers(std::span<const HeaderField> headers, std::string_view name) noexcept;

// Calls fn(element) for each element of the comma-separated list that the fields named
// `name` (ASCII case-insensitive) hold together, in order (RFC 9110 §5.6.1: every field
// line, each element without its surrounding whitespace, empty elements skipped).
template <class Fn>
void for_each_list_element(std::span<const HeaderField> headers, std::string_view name, Fn&& fn) {
  for (const HeaderField& h : headers) {
    if (!util::iequals(h.name, name)) continue;
    for (std::string_view v = h.value; !v.empty();) {
      const std::size_t comma = v.find(',');
      std::string_view element = v.substr(0, comma);
      while (!element.empty() && (element.front() == ' ' || element.front() == '\t'))
        element.remove_prefix(1);
      while (!element.empty() && (element.back() == ' ' || element.back() == '\t')) element.remove_suffix(1);
      if (!element.empty()) fn(element);
      v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    }
  }
}

// The value of the field named `name` (ASCII case-insensitive); several such fields are
// joined with ", " as RFC 9110 §5.3 combines them. nullopt when there is none.
std::optional<std::string> find_header(std::span<const HeaderField> headers, std::string_view name);

// application/x-www-form-urlencoded (WHATWG URL §5.1): pairs split at '&', name and value
// at the first '=' (a pair without '=' has the value ""), both percent-decoded with '+' as
// space and a '%' not followed by two hex digits kept as written (WHATWG URL §1.3). The
// value of the first pair whose decoded name is `name`; nullopt when none.
std::optional<std::string> find_form_value(std::string_view encoded, std::string_view name);

// How often `encoded` (as find_form_value reads it) holds the name `name`, counted as the
// most lenient parsers count: pairs split at '&' and at ';' (Rack before 3, Python before
// 3.9.2). `semicolon`: a pair find_form_value reads as `name` holds a ';', so those
// parsers read its value shorter (`code=A;x` is `A` to them).
struct FormOccurrences {
  std::size_t count = 0;
  bool semicolon = false;
};
FormOccurrences form_occurrences(std::string_view encoded, std::string_view name);

// Every value of `name` in `encoded`, decoded, in order, with pairs split at '&' and ';'
// (the most values any parser reads).
std::vector<std::string> form_values(std::string_view encoded, std::string_view name);

// True when the media type of a Content-Type value is `media_type` ("application/json";
// case-insensitive; parameters such as charset are ignored).
bool has_media_type(std::string_view content_type, std::string_view media_type) noexcept;

// has_media_type(content_type, "application/x-www-form-urlencoded").
bool is_form_content_type(std::string_view content_type) noexcept;

// One request being identified: the view, the route's path parameters and the subject,
// with the body parsed as JSON at most once and reused by the key template and the
// fingerprint. Holds references: `request` and `params` must outlive the context.
// Not safe for concurrent use (the parse is cached).
class RequestContext {
 public:
  RequestContext(const RequestView& request, const PathParams& params, std::string subject)
      : request_(request), params_(params), subject_(std::move(subject)) {}

  const RequestView& request() const noexcept { return request_; }
  const PathParams& path_params() const noexcept { return params_; }
  // The subject's value (a header value, or its SHA-256 hex); "" when the route has none.
  const std::string& subject() const noexcept { return subject_; }

  // The body parsed by parse_exact_json (exact numbers, I-JSON); nullptr when the body is
  // not JSON, json_error() then says why.
  const ExactJson* json_body();
  std::string json_error();

 private:
  const RequestView& request_;
  const PathParams& params_;
  std::string subject_;
  std::optional<Result<ExactJson>> json_;
};

}  // namespace idem::gateway
