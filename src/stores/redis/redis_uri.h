// The Redis store URIs (SPEC §3.6), parsed:
//   redis://[user:pass@]host[:port][/db][?prefix=P]
//   redis-cluster://[user:pass@]host[:port][,host[:port]...][?prefix=P]
// `:pass@` or `pass@` alone authenticates with the password (AUTH pass); the port
// defaults to 6379, db to 0; the prefix (default "idem:") starts every key the store
// writes, so several stores (or tests) can share one Redis.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "idem/status.h"

namespace idem::redis {

struct Endpoint {
  std::string host;
  std::uint16_t port = 6379;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// "host:port", or "[v6]:port".
std::string to_string(const Endpoint& e);

struct Config {
  bool cluster = false;
  std::vector<Endpoint> nodes;  // one for redis://; the seeds for redis-cluster://
  std::string user;             // empty: AUTH with the password alone
  std::string password;         // empty: no AUTH
  int db = 0;                   // SELECT db when not 0 (never on a cluster)
  std::string prefix = "idem:";
};

// `uri` is the whole URI, scheme included. invalid_argument naming the part that is wrong.
Result<Config> parse_uri(std::string_view uri);

}  // namespace idem::redis
