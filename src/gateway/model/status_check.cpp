#include "gateway/model/status_check.h"

#include <charconv>

#include "gateway/model/key_template.h"

namespace idem::gateway {

namespace {
constexpr std::string_view kKey = "{key}";
constexpr std::string_view kFence = "{fence}";
}  // namespace

std::optional<std::string> status_path_error(std::string_view path) {
  if (!path.starts_with('/')) return "must start with '/'";
  if (path.size() > 1024) return "is longer than 1024 characters";
  for (std::size_t i = 0; i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (c <= 0x20 || c == 0x7f) return "must not hold spaces or control characters";
    if (c == '{') {
      const std::string_view rest = path.substr(i);
      if (!rest.starts_with(kKey) && !rest.starts_with(kFence))
        return "may hold only the placeholders {key} and {fence}";
    } else if (c == '}' && !path.substr(0, i + 1).ends_with(kKey) &&
               !path.substr(0, i + 1).ends_with(kFence)) {
      return "may hold only the placeholders {key} and {fence}";
    }
  }
  return std::nullopt;
}

std::string status_target(std::string_view path, std::string_view key, std::uint64_t fence) {
  std::string out;
  out.reserve(path.size() + key.size() + 20);
  while (!path.empty()) {
    if (path.starts_with(kKey)) {
      percent_encode(key, out);
      path.remove_prefix(kKey.size());
    } else if (path.starts_with(kFence)) {
      char digits[24];
      const auto end = std::to_chars(digits, digits + sizeof digits, fence).ptr;
      out.append(digits, end);
      path.remove_prefix(kFence.size());
    } else {
      out.push_back(path.front());
      path.remove_prefix(1);
    }
  }
  return out;
}

const char* to_string(StatusReading r) noexcept {
  switch (r) {
    case StatusReading::done:
      return "done";
    case StatusReading::never_happened:
      return "never_happened";
    case StatusReading::unknown:
      return "unknown";
  }
  return "unknown";
}

StatusAnswer read_status_answer(unsigned status, std::optional<std::string_view> outcome,
                                std::optional<std::string_view> original) noexcept {
  if (!outcome) return {};
  if (status == 200 && *outcome == "done") {
    if (!original) return {StatusReading::done, 200};
    unsigned code = 0;
    const auto [end, ec] = std::from_chars(original->data(), original->data() + original->size(), code);
    if (ec != std::errc{} || end != original->data() + original->size() || code < 200 || code > 599)
      return {};
    return {StatusReading::done, code};
  }
  if ((status == 404 || status == 410) && *outcome == "none") return {StatusReading::never_happened, 0};
  return {};
}

}  // namespace idem::gateway
