#include "idem/store_uri.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "util/ascii.h"
#include "util/percent.h"

namespace idem {
namespace {

constexpr std::string_view kMask = "***";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), util::ascii_lower);
  return out;
}

using Span = std::pair<std::size_t, std::size_t>;  // [begin, end) in the URI

// The scheme, lowercase: everything before the first ':' ("" when there is none).
std::string scheme_of(std::string_view uri) {
  const auto colon = uri.find(':');
  return colon == std::string_view::npos ? std::string() : lower(uri.substr(0, colon));
}

// Where the user information of `uri` lies: after "://" up to the last '@'. A URI that
// lacks "://" (a mistyped scheme, or none: "pass@host") has it from its start, except for
// the schemes that take a path and no host (sqlite:PATH, memory:). {0, 0} when none.
Span userinfo_span(std::string_view uri) {
  const auto at = uri.rfind('@');
  if (at == std::string_view::npos) return {0, 0};
  const auto scheme_end = uri.find("://");
  if (scheme_end == std::string_view::npos) {
    const std::string scheme = scheme_of(uri);
    if (scheme == "sqlite" || scheme == "memory") return {0, 0};
    return {0, at};
  }
  if (at < scheme_end + 3) return {0, 0};
  return {scheme_end + 3, at};
}

// Schemes whose `name@host` names a user; for the others it is a password (redis://pass@h).
bool user_name_alone(std::string_view uri) {
  if (uri.find("://") == std::string_view::npos) return false;
  const std::string scheme = scheme_of(uri);
  return scheme == "postgres" || scheme == "postgresql" || scheme == "mysql";
}

// The secrets of `uri`, as sorted, merged spans.
std::vector<Span> secret_spans(std::string_view uri) {
  std::vector<Span> spans;
  const auto [ui_begin, ui_end] = userinfo_span(uri);
  if (ui_end > ui_begin) {
    const auto colon = uri.substr(ui_begin, ui_end - ui_begin).find(':');
    if (colon != std::string_view::npos)
      spans.emplace_back(ui_begin + colon + 1, ui_end);
    else if (!user_name_alone(uri))
      spans.emplace_back(ui_begin, ui_end);
  }
  // Query parameters: split at '&' from the first '?' on (a '?' inside a password only
  // starts the scan early; the user information is covered above).
  if (auto q = uri.find('?'); q != std::string_view::npos) {
    std::size_t begin = q + 1;
    while (begin <= uri.size()) {
      auto end = uri.find('&', begin);
      if (end == std::string_view::npos) end = uri.size();
      const std::string_view param = uri.substr(begin, end - begin);
      const auto eq = param.find('=');
      if (eq != std::string_view::npos &&
          lower(*util::percent_decode(param.substr(0, eq), util::BadPercent::keep)).find("password") !=
              std::string::npos)
        spans.emplace_back(begin + eq + 1, end);
      begin = end + 1;
    }
  }
  std::erase_if(spans, [](const Span& s) { return s.first >= s.second; });
  std::sort(spans.begin(), spans.end());
  std::vector<Span> merged;
  for (const Span& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, s.second);
    else
      merged.push_back(s);
  }
  return merged;
}

bool allowed_in_userinfo(char c) {
  // RFC 3986 §3.2.1: unreserved / pct-encoded / sub-delims / ":".
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("-._~!$&'()*+,;=:%").find(c) != std::string_view::npos;
}

void replace_all(std::string& text, std::string_view what) {
  if (what.empty()) return;
  for (auto i = text.find(what); i != std::string::npos; i = text.find(what, i + kMask.size()))
    text.replace(i, what.size(), kMask);
}

}  // namespace

std::string redact_uri(std::string_view uri) {
  std::string out;
  out.reserve(uri.size());
  std::size_t pos = 0;
  for (const auto& [begin, end] : secret_spans(uri)) {
    out.append(uri.substr(pos, begin - pos)).append(kMask);
    pos = end;
  }
  out.append(uri.substr(pos));
  return out;
}

std::string redact_secrets(std::string_view text, std::string_view uri) {
  std::vector<std::string> secrets;
  for (const auto& [begin, end] : secret_spans(uri)) {
    std::string raw(uri.substr(begin, end - begin));
    secrets.push_back(*util::percent_decode(raw, util::BadPercent::keep));
    secrets.push_back(std::move(raw));
  }
  // Longest first, so that a secret that holds another is replaced whole.
  std::sort(secrets.begin(), secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string out(text);
  for (const std::string& s : secrets) replace_all(out, s);
  return out;
}

Status check_uri_userinfo(std::string_view uri) {
  const auto [begin, end] = userinfo_span(uri);
  bool ok = true;
  for (std::size_t i = begin; i < end && ok; ++i) {
    const char c = uri[i];
    ok = allowed_in_userinfo(c) && (c != '%' || util::escaped_byte(uri.substr(0, end), i) >= 0);
  }
  if (ok) return Status::ok();
  return invalid_argument("store URI '" + redact_uri(uri) +
                          "': the user information holds a character that must be percent-encoded "
                          "(write '@' as %40, '/' as %2F, '?' as %3F, '#' as %23, '%' as %25 ...; the "
                          "user information ends at the last '@' of the URI)");
}

}  // namespace idem
