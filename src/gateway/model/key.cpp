#include "gateway/model/key.h"

#include <optional>

namespace idem {
namespace {

bool is_visible(char c) { return c >= 0x21 && c <= 0x7E; }

// Why `key` is not a valid key, or nothing when it is.
std::optional<std::string> key_problem(std::string_view key) {
  if (key.empty()) return "key is empty";
  if (key.size() > kMaxKeyLength) return "key longer than 255 characters";
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (!is_visible(key[i])) {
      return "key has a character outside visible ASCII (at position " + std::to_string(i + 1) + ")";
    }
  }
  return std::nullopt;
}

std::string_view trim_ows(std::string_view s) {
  auto is_ows = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// What follows an Item in a field value that should hold exactly one (RFC 8941 §3.3):
// a ',' starts the next member of a list, a ';' the Item's parameters.
Status not_one_item(std::string_view rest) {
  rest = trim_ows(rest);
  if (rest.starts_with(','))
    return invalid_argument("a list of keys (a ',' outside a quoted key): send one key");
  if (rest.starts_with(';')) return invalid_argument("the key has parameters (a ';'): send the key alone");
  return invalid_argument("characters after the closing quote of the key");
}

// RFC 8941 §4.2.5 sf-string: `"` then printable ASCII (0x20–0x7E) where `\` escapes only
// `"` and `\`, then `"` and nothing after it. `quoted` starts with the opening quote.
Result<std::string> unquote_sf_string(std::string_view quoted) {
  std::string out;
  for (std::size_t i = 1; i < quoted.size(); ++i) {
    char c = quoted[i];
    if (c == '"') {
      if (i + 1 != quoted.size()) return not_one_item(quoted.substr(i + 1));
      return out;
    }
    if (c < 0x20 || c > 0x7E) return invalid_argument("key has a character outside visible ASCII");
    if (c == '\\') {
      if (++i == quoted.size()) break;
      if (quoted[i] != '"' && quoted[i] != '\\') {
        return invalid_argument("quoted key may escape only '\"' and '\\'");
      }
      c = quoted[i];
    }
    out += c;
  }
  return invalid_argument("unterminated quoted key");
}

}  // namespace

bool is_valid_key(std::string_view key) noexcept {
  if (key.empty() || key.size() > kMaxKeyLength) return false;
  for (char c : key) {
    if (!is_visible(c)) return false;
  }
  return true;
}

Result<std::string> parse_key_header(std::string_view value) {
  std::string_view v = trim_ows(value);
  std::string key;
  if (!v.empty() && v.front() == '"') {
    Result<std::string> unquoted = unquote_sf_string(v);
    if (!unquoted) return unquoted.status();
    key = std::move(*unquoted);
  } else {
    // A bare key is an sf-token to a Structured Fields parser, with a wider alphabet (any
    // visible ASCII, so UUIDs and base64 keys stay keys), but never a list or parameters.
    if (const std::size_t at = v.find_first_of(",;"); at != std::string_view::npos)
      return not_one_item(v.substr(at));
    key = std::string(v);
  }
  if (auto problem = key_problem(key)) return invalid_argument(std::move(*problem));
  return key;
}

}  // namespace idem
