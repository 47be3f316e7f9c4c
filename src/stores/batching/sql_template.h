// The SQL stores' statement templates: {p} is the table prefix, {now} the server's clock in
// µs (each store's own expression), {grace} the tombstones' grace in µs, and $1..$9 (when
// `args` are given) literals already made safe by the caller. One pass: nothing inserted is
// read again, so a prefix or an argument holding "{now}" or "$1" stays as it is.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace idem::batching {

inline std::string expand_sql(std::string_view sql, std::string_view prefix, std::string_view now,
                              std::int64_t grace_micros, std::initializer_list<std::string> args = {}) {
  const std::string grace = std::to_string(grace_micros);
  std::string out;
  out.reserve(sql.size() * 2);
  for (std::size_t i = 0; i < sql.size();) {
    if (sql.substr(i, 3) == "{p}") {
      out += prefix;
      i += 3;
    } else if (sql.substr(i, 5) == "{now}") {
      out += now;
      i += 5;
    } else if (sql.substr(i, 7) == "{grace}") {
      out += grace;
      i += 7;
    } else if (args.size() > 0 && sql[i] == '$' && i + 1 < sql.size() && sql[i + 1] >= '1' &&
               static_cast<std::size_t>(sql[i + 1] - '1') < args.size()) {
      out += *(args.begin() + (sql[i + 1] - '1'));
      i += 2;
    } else {
      out += sql[i++];
    }
  }
  return out;
}

}  // namespace idem::batching
