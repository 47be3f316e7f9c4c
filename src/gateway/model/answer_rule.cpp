#include "gateway/model/answer_rule.h"

#include <algorithm>
#include <charconv>

#include "gateway/model/canonical_json.h"

namespace idem::gateway {
namespace {

namespace json = boost::json;

// The value at `path` in `doc`, as the key templates walk a body (key_template.cpp), or
// nullptr.
const json::value* member_at(const ExactJson& doc, const std::vector<std::string>& path) {
  const json::value* v = &doc.root();
  for (const std::string& segment : path) {
    if (const json::object* o = v->if_object()) {
      v = o->if_contains(segment);
    } else if (const json::array* a = v->if_array()) {
      std::size_t index = 0;
      auto [end, err] = std::from_chars(segment.data(), segment.data() + segment.size(), index);
      const bool plain = err == std::errc() && end == segment.data() + segment.size() &&
                         (segment.size() == 1 || segment[0] != '0');
      v = plain && index < a->size() ? &(*a)[index] : nullptr;
    } else {
      v = nullptr;
    }
    if (v == nullptr) return nullptr;
  }
  return v;
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

bool succeeds(const SuccessRule& rule, std::string_view body) {
  if (rule.kind == SuccessRule::Kind::text)
    return std::ranges::find(rule.values, trim(body)) != rule.values.end();
  Result<ExactJson> doc = parse_exact_json(body);
  if (!doc) return false;
  const json::value* v = member_at(*doc, rule.json_path);
  if (v == nullptr) return false;
  return std::ranges::find(rule.values, canonical_json(*doc, *v)) != rule.values.end();
}

}  // namespace

Result<std::string> success_value(std::string_view scalar, bool quoted) {
  if (!quoted) {
    if (scalar == "true" || scalar == "false" || scalar == "null") return std::string(scalar);
    Result<std::string> n = canonical_decimal(scalar);
    if (n) return n;
    // Not a JSON number ("0x1F", "1_000", "2026-12-05") is a string; a number whose exponent
    // is out of range is an error.
    if (!n.status().message().starts_with("unreadable")) return n.status();
  }
  return canonical_json_string(scalar);
}

Result<std::vector<std::string>> success_path(std::string_view text) {
  std::vector<std::string> path;
  for (std::string_view rest = text;;) {
    const std::size_t next = rest.find('.');
    const std::string_view segment = rest.substr(0, next);
    if (segment.empty()) return invalid_argument("'" + std::string(text) + "' has an empty member name");
    path.emplace_back(segment);
    if (next == std::string_view::npos) break;
    rest.remove_prefix(next + 1);
  }
  return path;
}

bool releases_answer(const std::vector<unsigned>& release_on, const SuccessRule& success_when,
                     const AnswerSeen& answer) {
  if (answer.release_asked) return true;
  if (std::ranges::find(release_on, answer.status) != release_on.end()) return true;
  const bool success_status = answer.status >= 200 && answer.status < 300;
  if (success_when.kind == SuccessRule::Kind::none || !success_status || !answer.body) return false;
  return !succeeds(success_when, *answer.body);
}

}  // namespace idem::gateway
