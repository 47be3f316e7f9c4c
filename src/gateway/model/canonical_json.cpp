// Canonical JSON (gateway/model/canonical_json.h). Parsing goes through Boost.JSON's
// basic_parser with our own handler, for two reasons: the handler is given each number's
// source text, which is where its exact value is (Boost converts every number to a double
// or a 64-bit integer); and RFC 8785 takes I-JSON input, which forbids duplicate member
// names (parsers disagree on which of two duplicates wins, so two bodies that canonicalize
// alike could mean different things to the service behind the gateway).
#include "gateway/model/canonical_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

namespace idem {
namespace {

namespace json = boost::json;

// Deeper input is refused: emission is recursive and must not exhaust the stack.
constexpr std::size_t kMaxDepth = 64;

// A basic_parser handler that builds a json::value as boost::json::parser does, with each
// number replaced by the index of its canonical form in `numbers` (ExactJson), and
// duplicate member names refused. On failure `error` says why.
struct Builder {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  json::value_stack st;
  std::string error;
  std::string number;                           // text of the number being read
  std::string key;                              // text of the member name being read
  std::vector<std::vector<std::string>> names;  // member names of each open object
  std::vector<std::string> numbers;             // canonical forms, indexed by the values

  bool fail(json::error_code& ec, std::string why) {
    error = std::move(why);
    ec = json::error::exception;
    return false;
  }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) {
    names.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t n, json::error_code& ec) {
    std::vector<std::string>& seen = names.back();
    std::sort(seen.begin(), seen.end());
    if (auto dup = std::adjacent_find(seen.begin(), seen.end()); dup != seen.end()) {
      return fail(ec, "JSON object has a duplicate member name \"" + dup->substr(0, 64) + "\"");
    }
    names.pop_back();
    st.push_object(n);
    return true;
  }
  bool on_array_begin(json::error_code&) { return true; }
  bool on_array_end(std::size_t n, json::error_code&) {
    st.push_array(n);
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    key.append(s.data(), s.size());
    st.push_chars(s);
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code&) {
    key.append(s.data(), s.size());
    names.back().push_back(std::move(key));
    key.clear();
    st.push_key(s);
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    st.push_chars(s);
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    st.push_string(s);
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    number.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t, json::string_view s, json::error_code& ec) { return on_number(s, ec); }
  bool on_uint64(std::uint64_t, json::string_view s, json::error_code& ec) { return on_number(s, ec); }
  bool on_double(double, json::string_view s, json::error_code& ec) { return on_number(s, ec); }
  bool on_bool(bool b, json::error_code&) {
    st.push_bool(b);
    return true;
  }
  bool on_null(json::error_code&) {
    st.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

  // The value Boost computed is not used: the text is the exact value.
  bool on_number(json::string_view s, json::error_code& ec) {
    number.append(s.data(), s.size());
    Result<std::string> canonical = canonical_decimal(number);
    if (!canonical) return fail(ec, canonical.status().message());
    number.clear();
    numbers.push_back(std::move(*canonical));
    st.push_uint64(numbers.size() - 1);
    return true;
  }
};

struct Parsed {
  json::value root;
  std::vector<std::string> numbers;
};

Result<Parsed> parse_exact(std::string_view text) {
  json::parse_options options;
  options.max_depth = kMaxDepth;
  json::basic_parser<Builder> parser(options);
  Builder& builder = parser.handler();
  builder.st.reset();
  json::error_code ec;
  std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = json::error::extra_data;
  if (ec) {
    std::string why = !builder.error.empty() ? builder.error
                      : ec == json::error::too_deep
                          ? "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels"
                          : "not JSON: " + ec.message();
    return invalid_argument(why + " (at byte " + std::to_string(used) + ")");
  }
  return Parsed{builder.st.release(), std::move(builder.numbers)};
}

// The UTF-16 code units of UTF-8 text, the order RFC 8785 sorts member names by. Parsed
// text is valid UTF-8; a stray byte in a hand-built value is taken as one unit of its own.
std::u16string utf16_units(json::string_view s) {
  std::u16string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out.push_back(b);
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (int j = 1; j < len; ++j) cp = (cp << 6) | (static_cast<unsigned char>(s[i + j]) & 0x3F);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
    i += len;
  }
  return out;
}

// RFC 8785 §3.2.2.2: only '"', '\\' and control characters are escaped, the common ones by
// their short forms, the rest as \u00xx in lowercase; everything else is copied as is.
void write_string(json::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void write_value(const ExactJson& doc, const json::value& v, std::string& out);

void write_object(const ExactJson& doc, const json::object& o, std::string& out) {
  std::vector<std::pair<std::u16string, const json::key_value_pair*>> members;
  members.reserve(o.size());
  for (const json::key_value_pair& kv : o) members.emplace_back(utf16_units(kv.key()), &kv);
  std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out += '{';
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += ',';
    write_string(members[i].second->key(), out);
    out += ':';
    write_value(doc, members[i].second->value(), out);
  }
  out += '}';
}

void write_value(const ExactJson& doc, const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::null:
      out += "null";
      break;
    case json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      break;
    case json::kind::uint64:
      out += doc.number(v);
      break;
    case json::kind::int64:  // an ExactJson holds neither
    case json::kind::double_:
      out += "null";
      break;
    case json::kind::string:
      write_string(v.get_string(), out);
      break;
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const json::value& e : v.get_array()) {
        if (!first) out += ',';
        first = false;
        write_value(doc, e, out);
      }
      out += ']';
      break;
    }
    case json::kind::object:
      write_object(doc, v.get_object(), out);
      break;
  }
}

// `digits` (no leading or trailing zero) × 10^`exponent` laid out as
// ECMAScript's Number::toString lays out its digits (ECMA-262 §6.1.6.1.20), without the '+'
// of a positive exponent.
std::string layout(bool negative, std::string_view digits, std::int64_t exponent) {
  const auto k = static_cast<std::int64_t>(digits.size());
  const std::int64_t n = k + exponent;  // the value is 0.digits × 10^n
  std::string out = negative ? "-" : "";
  if (k <= n && n <= 21) {
    out += digits;
    out.append(n - k, '0');
  } else if (0 < n && n <= 21) {
    out.append(digits.substr(0, n));
    out += '.';
    out.append(digits.substr(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(-n, '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits.substr(1));
    }
    out += 'e';
    out += std::to_string(n - 1);
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<ExactJson> parse_exact_json(std::string_view text) {
  try {
    Result<Parsed> parsed = parse_exact(text);
    if (!parsed) return parsed.status();
    ExactJson doc;
    doc.root_ = std::move(parsed->root);
    doc.numbers_ = std::move(parsed->numbers);
    return doc;
  } catch (const std::bad_alloc&) {
    return internal_error("JSON: out of memory");
  } catch (const std::exception& e) {
    // Boost refuses strings or containers beyond its size limits by throwing.
    return invalid_argument(std::string("not JSON: ") + e.what());
  }
}

Result<std::string> canonical_json(std::string_view text) {
  Result<ExactJson> parsed = parse_exact_json(text);
  if (!parsed) return parsed.status();
  return canonical_json(*parsed);
}

std::string canonical_json(const ExactJson& doc) { return canonical_json(doc, doc.root()); }

std::string canonical_json(const ExactJson& doc, const json::value& v) {
  std::string out;
  write_value(doc, v, out);
  return out;
}

std::string canonical_json_string(std::string_view utf8) {
  std::string out;
  write_string(json::string_view(utf8.data(), utf8.size()), out);
  return out;
}

Result<std::string> canonical_decimal(std::string_view text) {
  const auto unreadable = [&] {
    return invalid_argument("unreadable JSON number " + std::string(text.substr(0, 40)));
  };
  std::string_view s = text;
  const bool negative = !s.empty() && s.front() == '-';
  if (negative) s.remove_prefix(1);
  std::size_t i = 0;
  while (i < s.size() && is_digit(s[i])) ++i;
  std::string_view whole = s.substr(0, i);
  if (whole.empty() || (whole.size() > 1 && whole[0] == '0')) return unreadable();
  std::string_view fraction;
  if (i < s.size() && s[i] == '.') {
    std::size_t start = ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    fraction = s.substr(start, i - start);
    if (fraction.empty()) return unreadable();
  }
  std::int64_t exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool minus = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) minus = s[i++] == '-';
    std::size_t start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    std::string_view digits = s.substr(start, i - start);
    if (digits.empty()) return unreadable();
    while (digits.size() > 1 && digits[0] == '0') digits.remove_prefix(1);
    if (digits.size() > 18) {
      return invalid_argument("JSON number " + std::string(text.substr(0, 40)) +
                              " has an exponent beyond 18 digits");
    }
    std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
    if (minus) exponent = -exponent;
  }
  if (i != s.size()) return unreadable();

  // The value is (whole fraction) × 10^(exponent - |fraction|): strip the zeros that do
  // not change it. The text is at most a few GiB, so the exponent stays far from overflow.
  std::string digits;
  digits.reserve(whole.size() + fraction.size());
  digits.append(whole).append(fraction);
  exponent -= static_cast<std::int64_t>(fraction.size());
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return std::string("0");  // -0 too
  std::size_t last = digits.find_last_not_of('0');
  exponent += static_cast<std::int64_t>(digits.size() - 1 - last);
  return layout(negative, std::string_view(digits).substr(first, last - first + 1), exponent);
}

std::string canonical_number(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto written = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  return *canonical_decimal(std::string_view(buf, written.ptr - buf));
}

}  // namespace idem
