// The parameters of a store URI's query ("table_prefix=p&sync=full"), taken one at a time,
// as every store's URI parser reads them. Pure; safe for concurrent use.
#pragma once

#include <string_view>

namespace idem::util {

struct QueryParam {
  std::string_view text;   // the whole parameter, "name=value", as written
  std::string_view name;   // before the first '=' (all of it when there is none)
  std::string_view value;  // after the first '=', not decoded; empty when there is none
  bool has_value = false;  // whether there was an '='
};

// Takes the first parameter off `query` (up to the first '&', which goes too). Call while
// `query` is not empty; "a&&b" gives an empty parameter between the two.
inline QueryParam next_query_param(std::string_view& query) {
  const auto amp = query.find('&');
  QueryParam p;
  p.text = query.substr(0, amp);
  query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  const auto eq = p.text.find('=');
  p.name = p.text.substr(0, eq);
  p.has_value = eq != std::string_view::npos;
  if (p.has_value) p.value = p.text.substr(eq + 1);
  return p;
}

}  // namespace idem::util
