// The hop-by-hop fields (RFC 9110 §7.6.1): they describe one connection, so the gateway
// never forwards them (strip_hop_by_hop, http_reply.h) and never stores them for a replay
// (is_unstorable_header, stored_result.h). One list for both. Pure; safe for concurrent use.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

#include "util/ascii.h"

namespace idem::gateway {

// Lower case; names compare ASCII case-insensitively.
inline constexpr std::array<std::string_view, 9> kHopByHopFields = {
    "connection", "keep-alive",         "proxy-connection",   "te", "trailer", "transfer-encoding",
    "upgrade",    "proxy-authenticate", "proxy-authorization"};

// True when `name` is one of kHopByHopFields, in any case. The fields a message's
// Connection header names are hop-by-hop for that message too; strip_hop_by_hop removes
// those as well.
constexpr bool is_hop_by_hop(std::string_view name) noexcept {
  return std::any_of(kHopByHopFields.begin(), kHopByHopFields.end(),
                     [&](std::string_view n) { return util::iequals(n, name); });
}

}  // namespace idem::gateway
