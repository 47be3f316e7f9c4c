// Rules that involve several settings, checked both when a file is loaded and after
// command-line flags are applied. Internal to the config code.
#pragma once

#include <optional>
#include <string>

#include "gateway/model/config/config.h"

namespace idem::gateway::config_checks {

// Without a token, records and the control API would be open to anyone who can reach the
// admin listener: refuse a non-loopback address (every interface is not loopback).
inline std::optional<std::string> admin_exposed(const Config& c) {
  if (c.admin.has_tokens() || c.admin.listen.is_loopback()) return std::nullopt;
  return "a non-loopback admin address needs admin.token_env or admin.tokens (records and the control API "
         "would be open to the network)";
}

// Two listeners cannot bind one address, nor one port when either is on every interface
// (port 0 picks a free port for each).
inline std::optional<std::string> listeners_collide(const Config& c) {
  const ListenAddress &a = c.admin.listen, &l = c.listen;
  if (a.port == 0 || a.port != l.port) return std::nullopt;
  if (a == l) return "the admin listener cannot share the address of listen (" + l.to_string() + ")";
  if (a.every_interface() || l.every_interface()) {
    return "the admin listener (" + a.to_string() + ") and listen (" + l.to_string() +
           ") cannot share a port when one is on every interface";
  }
  return std::nullopt;
}

}  // namespace idem::gateway::config_checks
