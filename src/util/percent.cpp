#include "util/percent.h"

namespace idem::util {

std::optional<std::string> percent_decode(std::string_view text, BadPercent bad, Plus plus) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (const int byte = escaped_byte(text, i); byte >= 0) {
        out.push_back(static_cast<char>(byte));
        i += 2;
        continue;
      }
      if (bad == BadPercent::reject) return std::nullopt;
    }
    out.push_back(plus == Plus::space && c == '+' ? ' ' : c);
  }
  return out;
}

}  // namespace idem::util
