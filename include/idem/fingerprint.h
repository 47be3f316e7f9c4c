// Fingerprints: a 128-bit hash (XXH3-128) of what identifies a request, so that a key
// reused for a different request is told apart (a begin answers mismatch; docs/design.md).
// Pure functions, no I/O; safe for concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace idem {

// Accumulates fields and yields a 16-byte digest. Each field is length-prefixed, so
// ("ab","c") and ("a","bc") differ. Build one per request; not copyable.
//
// The encoding is part of the stored format (fingerprints persist in durable stores), so it
// must never change: XXH3-128 (seed 0) over, for each field in order, its length as 8 bytes
// little-endian followed by its bytes; an absent field is the length 2^64-1 and no bytes.
// The digest is XXH3's canonical (big-endian) form. Allocation failure throws bad_alloc.
class Fingerprinter {
 public:
  Fingerprinter();
  ~Fingerprinter();
  Fingerprinter(const Fingerprinter&) = delete;
  Fingerprinter& operator=(const Fingerprinter&) = delete;

  Fingerprinter& add(std::string_view field);
  // A field that is absent (a missing template value): distinct from every present value,
  // the empty string included.
  Fingerprinter& add_absent();

  // The 16 raw digest bytes. The fingerprinter may not be used afterwards.
  std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One-shot: the 16-byte XXH3-128 digest of `bytes`.
std::string hash128(std::string_view bytes);

// Lowercase hex of any bytes ("a1b2...").
std::string to_hex(std::string_view bytes);

}  // namespace idem
