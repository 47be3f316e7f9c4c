// The handler mirrors the one in src/core/canonical_json.cpp, which is internal to that
// file; both must accept and refuse the same texts (tests/gateway/json_body_test.cpp
// compares them).
#include "gateway/json_body.h"

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

namespace idem::gateway {
namespace {

namespace json = boost::json;

constexpr std::size_t kMaxDepth = 64;

struct ExactBuilder {
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

  // `approx` (Boost's conversion) only tells overflow from underflow; from_chars gives the
  // correctly rounded value.
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

Result<json::value> parse(std::string_view text) {
  json::parse_options options;
  options.max_depth = kMaxDepth;
  json::basic_parser<ExactBuilder> parser(options);
  ExactBuilder& builder = parser.handler();
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

}  // namespace

Result<json::value> parse_json_body(std::string_view body) {
  try {
    return parse(body);
  } catch (const std::bad_alloc&) {
    return internal_error("JSON body: out of memory");
  } catch (const std::exception& e) {
    // Boost refuses strings or containers beyond its size limits by throwing.
    return invalid_argument(std::string("not JSON: ") + e.what());
  }
}

}  // namespace idem::gateway
