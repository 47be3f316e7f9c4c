#include "gateway/admin/raw_json.h"

#include <boost/json.hpp>

#include "gateway/model/canonical_json.h"

namespace idem::gateway {
namespace {

constexpr std::string_view kSpace = " \t\r\n";

std::size_t skip_space(std::string_view t, std::size_t i) {
  while (i < t.size() && kSpace.find(t[i]) != std::string_view::npos) ++i;
  return i;
}

// One past the end of the string token starting at t[i] == '"'.
std::size_t skip_string(std::string_view t, std::size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\')
      ++i;
    else if (t[i] == '"')
      return i + 1;
  }
  return t.size();
}

// One past the end of the value starting at t[i] (valid JSON).
std::size_t skip_value(std::string_view t, std::size_t i) {
  if (i >= t.size()) return t.size();
  if (t[i] == '"') return skip_string(t, i);
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = skip_string(t, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return t.size();
  }
  while (i < t.size() && std::string_view(",}] \t\r\n").find(t[i]) == std::string_view::npos) ++i;
  return i;
}

}  // namespace

std::optional<std::string_view> member_text(std::string_view t, std::string_view name) {
  std::size_t i = skip_space(t, 0);
  if (i >= t.size() || t[i] != '{') return std::nullopt;
  ++i;
  for (;;) {
    i = skip_space(t, i);
    if (i >= t.size() || t[i] != '"') return std::nullopt;
    const std::size_t name_end = skip_string(t, i);
    // A name may be written with escapes ("\u0072esult"): compare what it says.
    boost::system::error_code ec;
    const boost::json::value decoded = boost::json::parse(t.substr(i, name_end - i), ec);
    i = skip_space(t, name_end);
    if (i >= t.size() || t[i] != ':') return std::nullopt;
    i = skip_space(t, i + 1);
    const std::size_t value_end = skip_value(t, i);
    if (!ec && decoded.is_string() && decoded.get_string() == name) return t.substr(i, value_end - i);
    i = skip_space(t, value_end);
    if (i >= t.size() || t[i] != ',') return std::nullopt;
    ++i;
  }
}

std::string json_value_text(std::string_view text) {
  if (parse_exact_json(text)) {
    const std::size_t begin = skip_space(text, 0);
    std::size_t end = text.size();
    while (end > begin && kSpace.find(text[end - 1]) != std::string_view::npos) --end;
    return std::string(text.substr(begin, end - begin));
  }
  return boost::json::serialize(boost::json::value(boost::json::string(text)));
}

std::string with_member(std::string object_json, std::string_view name, std::string_view value_json) {
  if (object_json.empty() || object_json.back() != '}') return object_json;
  object_json.pop_back();
  if (object_json.size() > 1) object_json += ',';
  object_json += boost::json::serialize(boost::json::value(boost::json::string(name)));
  object_json += ':';
  object_json += value_json;
  object_json += '}';
  return object_json;
}

}  // namespace idem::gateway
