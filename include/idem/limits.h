// The sizes every store holds (docs/stores.md, "Sizes"): the longest record key, scope and
// lock name. Every backend takes keys, scopes and names up to these lengths (the contract
// suite, tests/stores/contract_test.cpp, checks it); the gateway's config keeps every key it
// stores within them. A longer one may be refused (invalid_argument) by some stores.
// How large a result may be is each store's own: Store::max_result_bytes() (store.h).
#pragma once

#include <cstddef>

namespace idem {

// The longest record key, in bytes: the gateway's "<key_space>:<key>", a key space of 64
// characters, ':' and a key of 255 (docs/http.md, "What to send").
inline constexpr std::size_t kMaxStoredKeyBytes = 320;

// The longest scope, in bytes (a subject header's value, or its 64-character hash).
inline constexpr std::size_t kMaxScopeBytes = 2048;

// The longest lock name, in bytes: the gateway's lock names are "<scope>\n<stored key>".
inline constexpr std::size_t kMaxLockNameBytes = kMaxScopeBytes + 1 + kMaxStoredKeyBytes;

}  // namespace idem
