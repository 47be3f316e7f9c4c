#include "gateway/admin/ui_assets.h"

namespace idem::gateway {
namespace {

std::optional<std::string_view> content_type(std::string_view name) noexcept {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  return std::nullopt;
}

}  // namespace

std::optional<UiAsset> find_ui_asset(std::string_view path) noexcept {
  constexpr std::string_view kDir = "/ui/";
  std::string_view name;
  if (path == "/")
    name = "index.html";
  else if (path.starts_with(kDir))
    name = path.substr(kDir.size());
  else
    return std::nullopt;
  const std::optional<std::string_view> type = content_type(name);
  if (!type) return std::nullopt;
  for (const EmbeddedFile& f : ui_files())
    if (f.name == name) return UiAsset{*type, f.bytes};
  return std::nullopt;
}

}  // namespace idem::gateway
