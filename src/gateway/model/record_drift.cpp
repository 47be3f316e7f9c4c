#include "gateway/model/record_drift.h"

#include <algorithm>
#include <string_view>

#include "gateway/model/principal.h"
#include "gateway/model/request_fingerprint.h"
#include "idem/fingerprint.h"

namespace idem::gateway {
namespace {

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Whether a request on a route with this subject could have produced `scope`.
bool scope_fits(const Subject& subject, std::string_view scope) {
  switch (subject.kind) {
    case Subject::Kind::none:
      return scope.empty();
    case Subject::Kind::header:
    case Subject::Kind::jwt:
      return !scope.empty();
    case Subject::Kind::header_hash:
      return is_sha256_hex(scope);
  }
  return false;
}

enum class Written { empty, none, hashed };

// A record bound to its principal carries the request's fingerprint first (principal.h).
Written written_by(const std::string& fingerprint) {
  if (fingerprint.empty()) return Written::empty;
  return std::string_view(fingerprint).substr(0, kRequestFingerprintSize) == none_fingerprint()
             ? Written::none
             : Written::hashed;
}

// The drift of a record against the routes of its key space, or nothing when one of them
// reads it as written.
std::optional<Drift> drift_of(const std::vector<const Route*>& routes, const Record& r) {
  std::vector<const Route*> fitting;
  for (const Route* route : routes)
    if (scope_fits(route->policy.subject, r.scope)) fitting.push_back(route);
  if (fitting.empty()) return Drift::scope_shape;
  const Written w = written_by(r.fingerprint);
  bool any_body = false;
  for (const Route* route : fitting) {
    const bool none = route->policy.fingerprint.kind == FingerprintRule::Kind::none;
    if (w == Written::empty && none) return std::nullopt;
    if (w == Written::empty) any_body = true;
    if (w == Written::none && none) return std::nullopt;
    if (w == Written::hashed && !none) return std::nullopt;
  }
  return any_body ? Drift::fingerprint_any_body : Drift::fingerprint_mode;
}

std::string printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

}  // namespace

std::vector<DriftFinding> find_drift(std::span<const Route> routes, std::span<const Record> records) {
  std::vector<DriftFinding> findings;
  auto count = [&](Drift d, std::string_view key_space, const Record& r) {
    for (DriftFinding& f : findings)
      if (f.drift == d && f.key_space == key_space) return void(++f.count);
    findings.push_back({d, std::string(key_space), 1, r});
  };
  for (const Record& r : records) {
    const std::size_t colon = r.key.find(':');
    if (colon == std::string::npos || !is_key_space(std::string_view(r.key).substr(0, colon))) {
      count(Drift::no_key_space, "", r);
      continue;
    }
    const std::string_view key_space = std::string_view(r.key).substr(0, colon);
    std::vector<const Route*> readers;
    for (const Route& route : routes)
      if (route.mode == Mode::replay && route.key_space == key_space) readers.push_back(&route);
    if (readers.empty()) {
      count(Drift::key_space_unrouted, key_space, r);
    } else if (std::optional<Drift> d = drift_of(readers, r)) {
      count(*d, key_space, r);
    }
  }
  return findings;
}

std::string describe(const DriftFinding& f) {
  const std::string ks = "key space '" + f.key_space + "'";
  std::string what;
  switch (f.drift) {
    case Drift::no_key_space:
      what = "stored under no key space (written before key spaces, or by the library): no route reads them";
      break;
    case Drift::key_space_unrouted:
      what = "in " + ks + ", which no route of this config uses (a route renamed, or its key_space changed)";
      break;
    case Drift::scope_shape:
      what = "in " + ks + " with a scope no route of that key space produces (a route gained or lost its " +
             "subject, or changed between header and header-hash): repeats are not recognized";
      break;
    case Drift::fingerprint_mode:
      what = "in " + ks + " fingerprinted under another rule (`none` against body, json or templates): " +
             "every repeat is answered 422 key-reused";
      break;
    case Drift::fingerprint_any_body:
      what = "in " + ks +
             " written under `none` by an earlier release (empty fingerprint), read by a route " +
             "that fingerprints: replayed to any body until they expire";
      break;
  }
  return std::to_string(f.count) + " record" + (f.count == 1 ? " " : "s ") + what + "; e.g. scope \"" +
         printable(f.example.scope) + "\" key \"" + printable(f.example.key) + "\"";
}

}  // namespace idem::gateway
