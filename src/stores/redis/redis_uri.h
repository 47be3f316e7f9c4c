// The Redis store URIs (docs/configuration.md, "Stores"), parsed:
//   redis://[user:pass@]host[:port][/db][?prefix=P][&allow_eviction=true][&wait=N]
//   redis-cluster://[user:pass@]host[:port][,host[:port]...][?...the same parameters]
//   redis+sentinel://[user:pass@]host[:port][,host[:port]...]/MASTER[/db][?...the same,
//       &sentinel_user=U&sentinel_password=P]
//   rediss://, rediss-cluster://, rediss+sentinel://: the same over TLS, with
//       tls_ca=FILE, tls_cert=FILE, tls_key=FILE, tls_server_name=NAME
// `:pass@` or `pass@` alone authenticates with the password (AUTH pass); the port
// defaults to 6379 (26379 for a sentinel), db to 0; the prefix (default "idem:") starts
// every key the store writes, so several stores (or tests) can share one Redis.
// allow_eviction=true opens a server whose maxmemory-policy may evict keys; wait=N makes
// every claim and commit wait for N replicas (WAIT). For redis+sentinel:// the hosts are
// the sentinels, asked for the address of the master named MASTER; the user and password
// are the master's (the sentinels' own, if they ask for one, are sentinel_user and
// sentinel_password).
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

// TLS (rediss schemes): the server's certificate is verified against `ca_file` (empty: the
// system's CA certificates) and the name `server_name` (empty: the host connected to).
struct Tls {
  bool on = false;
  std::string ca_file;
  std::string cert_file;  // a client certificate (chain), PEM; with key_file
  std::string key_file;
  std::string server_name;
  friend bool operator==(const Tls&, const Tls&) = default;
};

struct Config {
  bool cluster = false;
  bool sentinel = false;
  // redis:// one node; redis-cluster:// the seeds; redis+sentinel:// the sentinels.
  std::vector<Endpoint> nodes;
  std::string master_name;  // redis+sentinel://: the master the sentinels watch under this name
  std::string sentinel_user;
  std::string sentinel_password;  // empty: the sentinels are not asked to AUTH
  std::string user;               // empty: AUTH with the password alone
  std::string password;           // empty: no AUTH
  int db = 0;                     // SELECT db when not 0 (never on a cluster)
  std::string prefix = "idem:";
  bool allow_eviction = false;  // open even when the server may evict keys
  int wait_replicas = 0;        // WAIT for this many replicas after a claim or a commit; 0: never
  Tls tls;
  // Not from the URI: a connection made with this config checks, once connected, that the
  // server answers ROLE as a master (redis+sentinel://'s connections to the master).
  bool check_role = false;
};

inline constexpr int kMaxWaitReplicas = 1000;

// `uri` is the whole URI, scheme included. invalid_argument naming the part that is wrong.
Result<Config> parse_uri(std::string_view uri);

}  // namespace idem::redis
