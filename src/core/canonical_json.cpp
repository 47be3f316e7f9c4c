// RFC 8785 canonicalization. Parsing goes through Boost.JSON's basic_parser with our own
// handler, for two reasons: Boost 1.81 converts decimal text to double with an error of up
// to an ulp or two, and a canonical form must use the correctly rounded value; and RFC 8785
// takes I-JSON input, which forbids duplicate member names (parsers disagree on which of two
// duplicates wins, so two bodies that canonicalize alike could mean different things to the
// service behind the gateway).
#include "idem/canonical_json.h"

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

// A basic_parser handler that builds a json::value as boost::json::parser does, with exact
// numbers (all as doubles) and duplicate member names refused. On failure `error` says why.
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
  bool on_int64(std::int64_t i, json::string_view s, json::error_code& ec) {
    return on_number(static_cast<double>(i), s, ec);
  }
  bool on_uint64(std::uint64_t u, json::string_view s, json::error_code& ec) {
    return on_number(static_cast<double>(u), s, ec);
  }
  bool on_double(double d, json::string_view s, json::error_code& ec) { return on_number(d, s, ec); }
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

  // `approx` is Boost's own conversion: good enough to tell overflow from underflow when
  // from_chars reports the text out of range, never used as the value.
  bool on_number(double approx, json::string_view s, json::error_code& ec) {
    number.append(s.data(), s.size());
    double d = 0;
    auto [end, err] = std::from_chars(number.data(), number.data() + number.size(), d);
    if (err == std::errc::result_out_of_range) {
      if (!(std::fabs(approx) < 1)) {
        return fail(ec, "JSON number " + number.substr(0, 40) + " is beyond the range of a double");
      }
      d = number.front() == '-' ? -0.0 : 0.0;  // underflow rounds to zero, as in ECMAScript
    } else if (err != std::errc() || end != number.data() + number.size()) {
      return fail(ec, "unreadable JSON number " + number.substr(0, 40));
    }
    number.clear();
    st.push_double(d);
    return true;
  }
};

Result<json::value> parse_exact(std::string_view text) {
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
  return builder.st.release();
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

void write_value(const json::value& v, std::string& out);

void write_object(const json::object& o, std::string& out) {
  std::vector<std::pair<std::u16string, const json::key_value_pair*>> members;
  members.reserve(o.size());
  for (const json::key_value_pair& kv : o) members.emplace_back(utf16_units(kv.key()), &kv);
  std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out += '{';
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += ',';
    write_string(members[i].second->key(), out);
    out += ':';
    write_value(members[i].second->value(), out);
  }
  out += '}';
}

void write_value(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::null:
      out += "null";
      break;
    case json::kind::bool_:
      out += v.get_bool() ? "true" : "false";
      break;
    case json::kind::int64:
      out += canonical_number(static_cast<double>(v.get_int64()));
      break;
    case json::kind::uint64:
      out += canonical_number(static_cast<double>(v.get_uint64()));
      break;
    case json::kind::double_:
      // Parsing never yields a non-finite number; a hand-built one is written as
      // JSON.stringify writes it.
      out += std::isfinite(v.get_double()) ? canonical_number(v.get_double()) : "null";
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
        write_value(e, out);
      }
      out += ']';
      break;
    }
    case json::kind::object:
      write_object(v.get_object(), out);
      break;
  }
}

}  // namespace

Result<json::value> parse_json_exact(std::string_view text) {
  try {
    return parse_exact(text);
  } catch (const std::bad_alloc&) {
    return internal_error("JSON: out of memory");
  } catch (const std::exception& e) {
    // Boost refuses strings or containers beyond its size limits by throwing.
    return invalid_argument(std::string("not JSON: ") + e.what());
  }
}

Result<std::string> canonical_json(std::string_view text) {
  Result<json::value> parsed = parse_json_exact(text);
  if (!parsed) return parsed.status();
  return canonical_json(*parsed);
}

std::string canonical_json(const json::value& v) {
  std::string out;
  write_value(v, out);
  return out;
}

// ECMAScript Number::toString (ECMA-262 §6.1.6.1.20): the shortest digits that round-trip
// (std::to_chars gives those), laid out in plain notation for exponents -7 < n <= 21 and in
// exponent notation ("1e+21", "1.5e-7") otherwise.
std::string canonical_number(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0) return "0";  // -0 too

  char buf[64];
  auto written = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  std::string_view sci(buf, written.ptr - buf);  // "d[.ddd]e±xx"
  std::size_t e = sci.find('e');
  std::string digits(1, sci[0]);
  if (e > 1) digits.append(sci.substr(2, e - 2));
  std::string_view exp_text = sci.substr(e + 1);
  if (exp_text.front() == '+') exp_text.remove_prefix(1);
  int exponent = 0;
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);

  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;  // the value is 0.digits × 10^n
  std::string out = d < 0 ? "-" : "";
  if (k <= n && n <= 21) {
    out += digits;
    out.append(n - k, '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, n);
    out += '.';
    out.append(digits, n);
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(-n, '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += n - 1 >= 0 ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

}  // namespace idem
