// The result that durability_child commits for key i, so that the test can check
// it byte for byte after the kill. Sizes vary (some span several database pages).
#pragma once

#include <cstdint>
#include <string>

namespace idem::testutil {

inline std::string result_for(const std::string& scope, std::uint64_t i) {
  std::string r = "result of " + scope + "/k" + std::to_string(i) + ":";
  const std::size_t size = 64 + (i * 997) % 9000;
  while (r.size() < size) r.push_back(static_cast<char>('a' + (r.size() * 7 + i) % 26));
  return r;
}

}  // namespace idem::testutil
