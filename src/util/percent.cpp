#include "util/percent.h"

namespace idem::util {

std::optional<std::string> percent_decode(std::string_view text, BadPercent bad, Plus plus) {
  // Sized once and written by index (the output is never longer than the input), then cut
  // to length: route matching decodes every path segment of every request.
  std::string out(text.size(), '\0');
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (const int byte = escaped_byte(text, i); byte >= 0) {
        out[n++] = static_cast<char>(byte);
        i += 2;
        continue;
      }
      if (bad == BadPercent::reject) return std::nullopt;
    }
    out[n++] = plus == Plus::space && c == '+' ? ' ' : c;
  }
  out.resize(n);
  return out;
}

}  // namespace idem::util
