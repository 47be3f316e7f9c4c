// What the fuzz targets share: a check that reports a broken invariant as a finding
// (abort, which libFuzzer and the replayer both report with the input), and the target
// a route's path pattern would be sent to.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace idem::fuzz {

// Aborts with `what` when `ok` is false. Not assert(): it must hold in every build.
inline void check(bool ok, const char* what, std::string_view detail = {}) {
  if (ok) return;
  const std::string d(detail);
  std::fprintf(stderr, "fuzz invariant broken: %s %s\n", what, d.c_str());
  std::abort();
}

// A path matching `pattern` ("/skus/{sku}/deduct", "/forms/*"): each `{name}` segment and
// the trailing `*` become `fill(i)` for the i-th of them, everything else stays.
template <class Fill>
std::string path_for(std::string_view pattern, Fill fill) {
  std::string out;
  int n = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{') {
      std::size_t close = pattern.find('}', i);
      if (close == std::string_view::npos) break;
      out += fill(n++);
      i = close;
    } else if (pattern[i] == '*' && i + 1 == pattern.size()) {
      out += fill(n++);
    } else {
      out += pattern[i];
    }
  }
  return out;
}

}  // namespace idem::fuzz
