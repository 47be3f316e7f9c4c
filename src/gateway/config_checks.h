// Rules that involve several settings, checked both when a file is loaded and after
// command-line flags are applied. Internal to the config code.
#pragma once

#include <optional>
#include <string>

#include "gateway/config.h"

namespace idem::gateway::config_checks {

// Without a token, records and the control API would be open to anyone who can reach the
// admin listener (SPEC §3.5): refuse a non-loopback address.
inline std::optional<std::string> admin_exposed(const Config& c) {
  if (!c.admin.token.empty() || c.admin.listen.is_loopback()) return std::nullopt;
  return "a non-loopback admin address needs admin.token_env (records and the control API "
         "would be open to the network)";
}

// Two listeners cannot bind one address (port 0 picks a free port for each).
inline std::optional<std::string> listeners_collide(const Config& c) {
  if (c.admin.listen.port == 0 || !(c.admin.listen == c.listen)) return std::nullopt;
  return "the admin listener cannot share the address of listen (" + c.listen.to_string() + ")";
}

}  // namespace idem::gateway::config_checks
