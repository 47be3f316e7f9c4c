#include "gateway/model/key_template.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "gateway/model/canonical_json.h"
#include "gateway/model/key.h"
#include "gateway/model/request_reading.h"
#include "util/ascii.h"

namespace idem::gateway {
namespace {

namespace json = boost::json;

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

template <class Pred>
bool all_of(std::string_view s, Pred pred) {
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

// The edit distance of `a` and `b` (insertions, deletions, substitutions), for "did you
// mean" in messages; the names compared are short.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The source a mistyped one likely meant ("jsn" → "json", "headers" → "header", "body" →
// "json"), or "" when none is close.
std::string_view likely_source(std::string_view source) {
  if (source == "body") return "json";
  if (source == "params" || source == "param") return "query";
  std::string lower(source);
  for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  std::string_view best;
  std::size_t best_distance = 3;  // at most 2 edits
  for (std::string_view known : {"json", "header", "query", "path", "form", "subject"}) {
    const std::size_t d = edit_distance(lower, known);
    if (d < best_distance) {
      best = known;
      best_distance = d;
    }
  }
  return best;
}

// `{json.items[0].sku}` written as the template grammar reads array elements,
// `{json.items.0.sku}` (JsonPath's `$.` and brackets, and `['name']`, undone).
std::string dotted_json(std::string_view name, bool optional) {
  std::string out;
  if (name.starts_with("$.")) name.remove_prefix(2);
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '[') {
      if (!out.empty() && out.back() != '.') out += '.';
    } else if (c == ']') {
      if (i + 1 < name.size() && name[i + 1] != '.' && name[i + 1] != '[') out += '.';
    } else if (c != '\'' && c != '"') {
      out += c;
    }
  }
  return "{json." + out + (optional ? "?}" : "}");
}

Result<KeyTemplate::Part> parse_placeholder(std::string_view inner) {
  using Source = KeyTemplate::Source;
  KeyTemplate::Part part;
  part.literal = false;
  part.text = "{" + std::string(inner) + "}";
  if (inner.ends_with('?')) {
    part.optional = true;
    inner.remove_suffix(1);
  }
  if (inner == "subject") {
    part.source = Source::subject;
    return part;
  }
  std::size_t dot = inner.find('.');
  std::string_view source = inner.substr(0, dot);
  std::string_view name = dot == std::string_view::npos ? std::string_view() : inner.substr(dot + 1);
  if (source == "json") {
    part.source = Source::json;
  } else if (source == "header") {
    part.source = Source::header;
  } else if (source == "query") {
    part.source = Source::query;
  } else if (source == "path") {
    part.source = Source::path;
  } else if (source == "form") {
    part.source = Source::form;
  } else {
    // Spaces around the source or the name are no part of either.
    auto trim = [](std::string_view s) {
      while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
      while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
      return s;
    };
    const std::string_view likely = likely_source(trim(source));
    const std::string_view trimmed_name = trim(name);
    std::string hint;
    if (source.starts_with("json["))
      hint = ": did you mean " + dotted_json(inner.substr(4), part.optional) + "?";
    else if (likely == "subject")
      hint = ": did you mean {subject}?";
    else if (!likely.empty())
      hint = ": did you mean {" + std::string(likely) +
             (trimmed_name.empty() ? ".NAME" : "." + std::string(trimmed_name)) + (part.optional ? "?" : "") +
             "}?";
    return invalid_argument("unknown placeholder " + part.text +
                            " (expected json.*, header.*, query.*, path.*, form.* or subject)" + hint);
  }
  if (name.empty()) {
    return invalid_argument(part.text + " needs a name: {" + std::string(source) + ".NAME}");
  }
  switch (part.source) {
    case Source::json:
      // A member name with brackets never renders from an array: the grammar indexes
      // arrays as fields ({json.items.0.sku}), as JsonPath users do not expect.
      if (name.find_first_of("[]") != std::string_view::npos || name.starts_with("$."))
        return invalid_argument(part.text +
                                " never renders: array elements are fields by index, and the path "
                                "starts after json.: did you mean " +
                                dotted_json(name, part.optional) + "?");
      for (std::string_view rest = name;;) {
        std::size_t next = rest.find('.');
        std::string_view segment = rest.substr(0, next);
        if (segment.empty()) return invalid_argument(part.text + " has an empty field name");
        part.json_path.emplace_back(segment);
        if (next == std::string_view::npos) break;
        rest.remove_prefix(next + 1);
      }
      break;
    case Source::header:
      if (!util::is_token(name)) return invalid_argument(part.text + ": not a valid header name");
      break;
    case Source::path:
      if (!all_of(name, is_identifier_char)) {
        return invalid_argument(part.text + ": path parameter names are letters, digits and '_'");
      }
      break;
    default:
      break;
  }
  if (part.source != Source::json) part.name = std::string(name);
  return part;
}

// A placeholder's value in the request, untyped; or why it cannot be read (refused).
struct Value {
  enum class Kind { absent, text, json, refused } kind = Kind::absent;
  std::string text;
  const json::value* json = nullptr;  // a value of *doc
  const ExactJson* doc = nullptr;
  std::optional<Rejection> refusal;  // kind == refused
};

Value refused(Rejection r) { return {Value::Kind::refused, {}, nullptr, nullptr, std::move(r)}; }

// Values read as the service reads them (request_reading.h), or refused.
Value lookup(const KeyTemplate::Part& part, RequestContext& request) {
  using Source = KeyTemplate::Source;
  using Kind = Value::Kind;
  const RequestView& view = request.request();
  auto text_or_absent = [](std::optional<std::string> v) {
    return v ? Value{Kind::text, std::move(*v), nullptr, nullptr, {}} : Value{};
  };
  auto read = [&](ProblemOr<std::optional<std::string>> v) {
    return v ? text_or_absent(std::move(*v)) : refused(std::move(v).rejection());
  };
  switch (part.source) {
    case Source::subject:
      return text_or_absent(request.subject().empty() ? std::nullopt : std::optional(request.subject()));
    case Source::header:
      return read(read_header(view.headers, part.name));
    case Source::query:
    case Source::form:
      return read(read_parameter(view, part.name, part.source == Source::form));
    case Source::path:
      for (const auto& [name, value] : request.path_params()) {
        if (name == part.name) return {Kind::text, value, nullptr, nullptr, {}};
      }
      return {};
    case Source::json:
      break;
  }
  const ExactJson* doc = request.json_body();
  if (doc == nullptr) {
    return refused({Problem::body_invalid, part.text + " needs a JSON body: " + request.json_error()});
  }
  const json::value* v = &doc->root();
  for (const std::string& segment : part.json_path) {
    if (const json::object* o = v->if_object()) {
      if (member_in_another_case(*o, segment)) {
        return refused({Problem::request_ambiguous,
                        part.text + ": the JSON body has a member whose name differs from " + segment +
                            " only in case, which Go and ASP.NET Core read as " + segment + " too"});
      }
      v = o->if_contains(segment);
    } else if (const json::array* a = v->if_array()) {
      std::size_t index = 0;
      auto [end, err] = std::from_chars(segment.data(), segment.data() + segment.size(), index);
      bool plain = err == std::errc() && end == segment.data() + segment.size() &&
                   (segment.size() == 1 || segment[0] != '0');
      v = plain && index < a->size() ? &(*a)[index] : nullptr;
    } else {
      v = nullptr;  // a scalar has no fields
    }
    if (v == nullptr) return {};
  }
  return {Kind::json, {}, v, doc, {}};
}

bool is_unreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

}  // namespace

Result<KeyTemplate> KeyTemplate::parse(std::string_view text) {
  KeyTemplate t;
  t.text_ = std::string(text);
  std::string literal;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}') return invalid_argument("'}' at position " + std::to_string(i + 1) + " has no '{'");
    if (text[i] != '{') {
      literal += text[i];
      continue;
    }
    std::size_t close = text.find_first_of("{}", i + 1);
    if (close == std::string_view::npos || text[close] == '{') {
      return invalid_argument("'{' at position " + std::to_string(i + 1) + " is not closed");
    }
    Result<Part> part = parse_placeholder(text.substr(i + 1, close - i - 1));
    if (!part) return part.status();
    if (!literal.empty()) t.parts_.push_back(Part{true, Source::json, std::move(literal), {}, {}, false});
    literal.clear();
    t.parts_.push_back(std::move(*part));
    i = close;
  }
  if (!literal.empty()) t.parts_.push_back(Part{true, Source::json, std::move(literal), {}, {}, false});
  return t;
}

bool KeyTemplate::has_placeholders() const noexcept {
  for (const Part& p : parts_) {
    if (!p.literal) return true;
  }
  return false;
}

bool KeyTemplate::uses(Source source) const noexcept {
  for (const Part& p : parts_) {
    if (!p.literal && p.source == source) return true;
  }
  return false;
}

std::optional<std::string> unseparated_placeholders(const KeyTemplate& tmpl) {
  const KeyTemplate::Part* last = nullptr;  // the placeholder before the literal text read so far
  bool separated = true;
  for (const KeyTemplate::Part& part : tmpl.parts()) {
    if (part.literal) {
      for (char c : part.text) separated = separated || !is_unreserved(c);
      continue;
    }
    if (last != nullptr && !separated) {
      return last->text + " and " + part.text +
             " must be separated by text holding a character other than letters, digits, '-', '.', '_' "
             "and '~' (such as ':'), or two different requests could render the same key";
    }
    last = &part;
    separated = false;
  }
  return std::nullopt;
}

void percent_encode(std::string_view value, std::string& out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : value) {
    if (is_unreserved(c)) {
      out += c;
    } else {
      auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    }
  }
}

ProblemOr<std::string> render_key(const KeyTemplate& tmpl, RequestContext& request) {
  std::string key;
  for (const KeyTemplate::Part& part : tmpl.parts()) {
    if (part.literal) {
      key += part.text;
      continue;
    }
    Value v = lookup(part, request);
    if (v.kind == Value::Kind::refused) return std::move(*v.refusal);
    std::string text;
    if (v.kind == Value::Kind::text) {
      text = std::move(v.text);
    } else if (v.kind == Value::Kind::json) {
      switch (v.json->kind()) {
        case json::kind::string:
          text = std::string(v.json->get_string());
          break;
        case json::kind::uint64:
          text = v.doc->number(*v.json);  // its exact value, canonical
          break;
        case json::kind::int64:  // an ExactJson holds neither
        case json::kind::double_:
          break;
        case json::kind::bool_:
          text = v.json->get_bool() ? "true" : "false";
          break;
        case json::kind::null:
          break;  // absent
        case json::kind::object:
        case json::kind::array:
          return Rejection{
              Problem::key_invalid,
              part.text + " is a JSON " + (v.json->is_object() ? "object" : "array") + ", not a key value"};
      }
    }
    if (text.empty() && part.optional) continue;
    if (text.empty()) return Rejection{Problem::key_missing, part.text + " is absent from the request"};
    percent_encode(text, key);
  }
  if (!is_valid_key(key)) {
    return Rejection{Problem::key_invalid, "the key rendered from " + tmpl.text() + " is longer than " +
                                               std::to_string(kMaxKeyLength) + " characters"};
  }
  return key;
}

std::optional<Rejection> add_to_fingerprint(const KeyTemplate& tmpl, RequestContext& request,
                                            Fingerprinter& fp) {
  for (const KeyTemplate::Part& part : tmpl.parts()) {
    if (part.literal) {
      fp.add(part.text);
      continue;
    }
    Value v = lookup(part, request);
    if (v.kind == Value::Kind::refused) return v.refusal;
    if (v.kind == Value::Kind::text) {
      fp.add(canonical_json_string(v.text));
    } else if (v.kind == Value::Kind::json && !v.json->is_null()) {
      fp.add(canonical_json(*v.doc, *v.json));
    } else {
      fp.add_absent();
    }
  }
  return std::nullopt;
}

}  // namespace idem::gateway
