#include "gateway/model/route.h"

#include <algorithm>

#include "util/percent.h"

namespace idem::gateway {
namespace {

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// "a/b/c" → {"a", "b", "c"}; "" → {""}.
std::vector<std::string_view> split_segments(std::string_view s) {
  std::vector<std::string_view> out;
  for (;;) {
    std::size_t slash = s.find('/');
    out.push_back(s.substr(0, slash));
    if (slash == std::string_view::npos) return out;
    s.remove_prefix(slash + 1);
  }
}

// The path's segments as frameworks route them: empty segments dropped (repeated '/'
// merged, a trailing '/' ignored) and each segment's ";parameters" cut off. Still
// percent-encoded: a parameter's value is decoded once, by its consumer.
using NormalizedPath = std::vector<std::string_view>;
NormalizedPath normalize_path(std::string_view path) {
  NormalizedPath out;
  for (std::string_view s : split_segments(path.substr(1))) {
    s = s.substr(0, s.find(';'));
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

bool path_ends_in_slash(std::string_view path) {
  const auto last = path.find_last_not_of('/');
  return last != std::string_view::npos ? last + 1 < path.size() : !path.empty();
}

// A literal segment as routes compare it: percent-decoded and ASCII case folded.
std::string fold_segment(std::string_view segment) {
  std::string out = *util::percent_decode(segment, util::BadPercent::keep);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace

Result<PathPattern> PathPattern::parse(std::string_view text, bool format_suffix) {
  if (text.empty() || text.front() != '/') return invalid_argument("must start with '/'");
  if (text.find_first_of("?#") != std::string_view::npos) {
    return invalid_argument("a path pattern has no query or fragment ('?', '#')");
  }
  PathPattern p;
  p.text_ = std::string(text);
  p.format_suffix_ = format_suffix;
  std::vector<std::string_view> segments = split_segments(text.substr(1));
  if (segments.back() == "*") {
    if (format_suffix) {
      return invalid_argument(
          "format_suffix is for a pattern that ends in a segment: a prefix pattern (\"/*\") "
          "matches every path below it already");
    }
    p.prefix_ = true;
    segments.pop_back();
  }
  for (std::string_view s : segments) {
    if (s.empty()) continue;  // "/a//b/" routes as "/a/b", as requests do
    if (s.find('*') != std::string_view::npos) {
      return invalid_argument("'*' is allowed only as a trailing \"/*\" (a prefix match)");
    }
    if (s.size() >= 2 && s.front() == '{' && s.back() == '}') {
      std::string_view name = s.substr(1, s.size() - 2);
      if (!is_identifier(name)) {
        return invalid_argument("parameter {" + std::string(name) + "}: names are letters, digits and '_'");
      }
      if (p.has_param(name)) return invalid_argument("parameter {" + std::string(name) + "} appears twice");
      p.segments_.push_back({true, std::string(name)});
    } else if (s.find_first_of("{}") != std::string_view::npos) {
      return invalid_argument("a {parameter} must be a whole path segment (\"/a/{name}/b\")");
    } else {
      p.segments_.push_back({false, fold_segment(s)});
    }
  }
  return p;
}

bool PathPattern::has_param(std::string_view name) const noexcept {
  return std::any_of(segments_.begin(), segments_.end(),
                     [&](const Segment& s) { return s.param && s.text == name; });
}

std::optional<PathParams> PathPattern::match(std::string_view path) const {
  if (path.empty() || path.front() != '/' || text_.empty()) return std::nullopt;
  const NormalizedPath segments = normalize_path(path);
  // A prefix pattern needs more: "/forms/*" matches "/forms/", "/FORMS//" and "/forms/a/b",
  // not "/forms".
  const std::size_t n = segments_.size();
  if (prefix_ ? segments.size() < n || (segments.size() == n && !path_ends_in_slash(path))
              : segments.size() != n) {
    return std::nullopt;
  }
  PathParams params;
  for (std::size_t i = 0; i < n; ++i) {
    const bool suffixed = format_suffix_ && i + 1 == n;
    if (segments_[i].param) {
      std::string value = *util::percent_decode(segments[i], util::BadPercent::keep);
      if (suffixed) value.erase(std::min(value.rfind('.'), value.size()));
      params.emplace_back(segments_[i].text, std::move(value));
    } else if (const std::string folded = fold_segment(segments[i]);
               folded != segments_[i].text && !(suffixed && folded.starts_with(segments_[i].text) &&
                                                folded[segments_[i].text.size()] == '.')) {
      return std::nullopt;
    }
  }
  return params;
}

bool PathPattern::covers(const PathPattern& other) const noexcept {
  if (text_.empty() || other.text_.empty() || format_suffix_ != other.format_suffix_) return false;
  const std::size_t n = segments_.size(), m = other.segments_.size();
  if (prefix_ ? (other.prefix_ ? m < n : m <= n) : (other.prefix_ || m != n)) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (segments_[i].param) continue;
    if (other.segments_[i].param || other.segments_[i].text != segments_[i].text) return false;
  }
  return true;
}

bool is_key_space(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxKeySpaceLength) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string stored_key(std::string_view key_space, std::string_view key) {
  std::string stored;
  stored.reserve(key_space.size() + 1 + key.size());
  stored.append(key_space).append(1, ':').append(key);
  return stored;
}

Route default_route(const Policy& defaults) {
  Route r;
  r.name = "default";
  r.key_space = r.name;
  r.methods = {"POST", "PATCH"};
  r.path = *PathPattern::parse("/*");
  r.required = false;
  r.policy = defaults;
  return r;
}

std::optional<RouteMatch> match_route(std::span<const Route> routes, std::string_view method,
                                      std::string_view target) {
  std::string_view path = target_path(target);
  for (const Route& route : routes) {
    if (std::find(route.methods.begin(), route.methods.end(), method) == route.methods.end()) continue;
    if (std::optional<PathParams> params = route.path.match(path)) {
      return RouteMatch{&route, std::move(*params)};
    }
  }
  return std::nullopt;
}

}  // namespace idem::gateway
