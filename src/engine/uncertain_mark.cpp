// The mark of an uncertain record (engine/uncertain_mark.h).
#include "engine/uncertain_mark.h"

#include <charconv>

namespace idem {

namespace {

// The value of `name=` in "a=1;b=2;c=3", or nullopt.
std::optional<std::string_view> field(std::string_view text, std::string_view name) {
  while (!text.empty()) {
    const std::size_t end = text.find(';');
    const std::string_view item = text.substr(0, end);
    if (item.size() > name.size() && item.starts_with(name) && item[name.size()] == '=')
      return item.substr(name.size() + 1);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return std::nullopt;
}

template <class T>
T number(std::optional<std::string_view> s) {
  T v = 0;
  if (s) {
    const auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || p != s->data() + s->size()) v = 0;
  }
  return v;
}

}  // namespace

std::string uncertain_prefix(std::string_view marker, Fence fence) {
  std::string out(marker);
  out += "fence=";
  out += std::to_string(fence);
  out += ';';
  return out;
}

std::string uncertain_result(std::string_view marker, const UncertainMark& mark) {
  if (mark.fence == 0) return std::string(marker);  // nothing known: the marker alone
  std::string out = uncertain_prefix(marker, mark.fence);
  out += "instance=";
  out += std::string_view(mark.instance).substr(0, mark.instance.find(';'));
  out += ";at=";
  out += std::to_string(mark.at_ms);
  return out;
}

std::optional<UncertainMark> read_uncertain(std::string_view result, std::string_view marker) {
  if (marker.empty() || !result.starts_with(marker)) return std::nullopt;
  const std::string_view text = result.substr(marker.size());
  UncertainMark m;
  m.fence = number<Fence>(field(text, "fence"));
  if (auto i = field(text, "instance")) m.instance = std::string(*i);
  m.at_ms = number<std::int64_t>(field(text, "at"));
  return m;
}

}  // namespace idem
