#include "idem/fingerprint.h"

#include <cassert>
#include <cstdint>

// The state is a member, not a second allocation (XXH3_createState).
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "util/hex.h"

namespace idem {
namespace {

// Present fields cannot be this long, so the marker of an absent field never collides.
constexpr std::uint64_t kAbsent = ~std::uint64_t{0};

std::string canonical_digest(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  return std::string(reinterpret_cast<const char*>(c.digest), sizeof c.digest);
}

}  // namespace

struct Fingerprinter::State {
  State() {
    XXH3_INITSTATE(&xxh);
    XXH3_128bits_reset(&xxh);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  void update(const void* data, std::size_t size) {
    assert(!finished && "Fingerprinter used after finish()");
    // Fails only on a null state, which the constructor rules out.
    (void)XXH3_128bits_update(&xxh, data, size);
  }
  void length(std::uint64_t n) {
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(n >> (8 * i));
    update(le, sizeof le);
  }

  XXH3_state_t xxh;
  bool finished = false;
};

Fingerprinter::Fingerprinter() : state_(std::make_unique<State>()) {}
Fingerprinter::~Fingerprinter() = default;

Fingerprinter& Fingerprinter::add(std::string_view field) {
  state_->length(field.size());
  state_->update(field.data(), field.size());
  return *this;
}

Fingerprinter& Fingerprinter::add_absent() {
  state_->length(kAbsent);
  return *this;
}

std::string Fingerprinter::finish() {
  assert(!state_->finished && "Fingerprinter::finish() called twice");
  state_->finished = true;
  return canonical_digest(XXH3_128bits_digest(&state_->xxh));
}

std::string hash128(std::string_view bytes) {
  return canonical_digest(XXH3_128bits(bytes.data(), bytes.size()));
}

std::string to_hex(std::string_view bytes) { return util::to_hex(bytes); }

}  // namespace idem
