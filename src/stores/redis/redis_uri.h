// The Redis store URIs (docs/stores.md), parsed:
//   redis://[user:pass@]host[:port][/db][?prefix=P][&allow_eviction=true][&wait=N]
//   redis-cluster://[user:pass@]host[:port][,host[:port]...][?...the same parameters]
// `:pass@` or `pass@` alone authenticates with the password (AUTH pass); the port
// defaults to 6379, db to 0; the prefix (default "idem:") starts every key the store
// writes, so several stores (or tests) can share one Redis. allow_eviction=true opens a
// server whose maxmemory-policy may evict keys; wait=N makes every claim and commit wait
// for N replicas (WAIT).
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
  bool allow_eviction = false;  // open even when the server may evict keys
  int wait_replicas = 0;        // WAIT for this many replicas after a claim or a commit; 0: never
};

inline constexpr int kMaxWaitReplicas = 1000;

// `uri` is the whole URI, scheme included. invalid_argument naming the part that is wrong.
Result<Config> parse_uri(std::string_view uri);

}  // namespace idem::redis
