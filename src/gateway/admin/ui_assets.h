// The operator's page on the admin listener (docs/admin.md, "The operator's page"): the
// files of src/gateway/admin/ui/, embedded in the binary at build time by
// cmake/embed_files.cmake, so serving them reads nothing from the disk.
// Pure; safe for concurrent use.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace idem::gateway {

// One embedded file: its name (without directory) and its bytes.
struct EmbeddedFile {
  std::string_view name;
  std::string_view bytes;
};

// Every file of src/gateway/admin/ui/ (generated: ui_files.cpp in the build tree).
std::span<const EmbeddedFile> ui_files();

struct UiAsset {
  std::string_view content_type;  // with charset for text
  std::string_view body;
};

// The asset served at `path`, a request's path: `/` is index.html, `/ui/NAME` the file
// NAME with a known extension (.html, .js, .css); nullopt for anything else.
std::optional<UiAsset> find_ui_asset(std::string_view path) noexcept;

}  // namespace idem::gateway
