// The store protocol's files (protocol/README.md): the Redis scripts and the PostgreSQL and MySQL
// schema and statements, embedded into the library at build time (cmake/embed_protocol.cmake), so
// that the C++ stores send what the files say and nothing else. Pure; safe for concurrent use.
#pragma once

#include <cstddef>
#include <string_view>

namespace idem::protocol {

// The text of protocol/<path> ("redis/begin.lua", "postgres/schema.sql"), as the file holds it.
// Every path the stores use exists (protocol_test checks them all): an unknown path is a
// programming error and aborts.
std::string_view file(std::string_view path);

// What a store sends of protocol/<path>: the file without its header (the comment lines up to the
// first empty line), with the whitespace at both ends removed (protocol/README.md, "Files").
std::string_view body(std::string_view path);

// Every embedded path, sorted.
std::size_t file_count();
std::string_view path_at(std::size_t i);

namespace detail {
struct EmbeddedFile {
  std::string_view path;
  std::string_view text;
};
extern const EmbeddedFile kFiles[];
extern const std::size_t kFileCount;
}  // namespace detail

}  // namespace idem::protocol
