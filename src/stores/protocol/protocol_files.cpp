#include "stores/protocol/protocol_files.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace idem::protocol {
namespace {

const detail::EmbeddedFile* find(std::string_view path) {
  const auto* end = detail::kFiles + detail::kFileCount;
  const auto* it =
      std::lower_bound(detail::kFiles, end, path,
                       [](const detail::EmbeddedFile& f, std::string_view p) { return f.path < p; });
  if (it == end || it->path != path) {
    std::fprintf(stderr, "idem: protocol/%s is not embedded in this build\n", std::string(path).c_str());
    std::abort();
  }
  return it;
}

constexpr std::string_view kSpace = " \t\r\n";

}  // namespace

std::string_view file(std::string_view path) { return find(path)->text; }

std::string_view body(std::string_view path) {
  std::string_view text = file(path);
  // The header: comment lines ("--"), ended by the first empty line.
  if (text.starts_with("--")) {
    const auto blank = text.find("\n\n");
    text.remove_prefix(blank == std::string_view::npos ? text.size() : blank + 2);
  }
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

std::size_t file_count() { return detail::kFileCount; }
std::string_view path_at(std::size_t i) { return detail::kFiles[i].path; }

}  // namespace idem::protocol
