// The gateway's configuration (docs/configuration.md) and how it is read: a YAML file, the defaults
// `idem serve --upstream URL` runs with, and the command-line flags that override both.
// Loading validates everything a config can get wrong, so a running gateway never meets
// an invalid setting; any mistake throws ConfigError naming the file, line and key.
// Loading has no global state (it reads the environment through a ConfigEnvironment, and
// the file in load_config_file); a loaded Config is immutable and safe to share between
// threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/model/config/address.h"
#include "gateway/model/forwarding.h"
#include "gateway/model/policy.h"
#include "gateway/model/route.h"
#include "gateway/model/token_limits.h"
#include "idem/clock.h"

namespace idem::gateway {

// An invalid configuration. what() reads "idem.yaml:12: routes[1].match.path: must start
// with '/'" (source:line: key: reason); parts that do not apply are left out: no line for
// a file that cannot be read, no source and line for a flag ("--upstream: ..."). Control
// characters (bytes below 0x20, and 0x7F) in any part are written \xHH, in what() and in
// the accessors alike.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string source, int line, std::string key, std::string reason);

  const std::string& source() const noexcept { return source_; }  // file name, or "" for flags
  int line() const noexcept { return line_; }                     // 1-based; 0 when none applies
  const std::string& key() const noexcept { return key_; }        // "routes[1].match.path", "--upstream"
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string source_;
  int line_;
  std::string key_;
  std::string reason_;
};

// How a config reads the environment: the variable admin.token_env names, and `${NAME}` in
// any string value (docs/configuration.md, "Secrets from the environment").
struct ConfigEnvironment {
  // The variable's value, or nullopt when it is unset. Null: the process environment.
  std::function<std::optional<std::string>(const std::string& name)> lookup = {};
  // True (`idem serve`, `idem check --strict`): an unset variable is a ConfigError naming
  // it. False (`idem check`): it is a warning, added to `warnings`, and reads as empty (an
  // unset token_env as a token that is set), so a config can be checked on a machine that
  // does not hold its secrets.
  bool strict = true;
  std::vector<ConfigError>* warnings = nullptr;

  std::optional<std::string> get(const std::string& name) const;
};

// What clients may hold of a listener (docs/configuration.md, "Connections and bodies"):
// its open connections and the request-body bytes held in memory for them, in all and from
// one client (an IPv4 address, or an IPv6 /64). At a connection cap the connection that has
// waited longest for a request is closed to make room.
struct ListenerLimits {
  std::size_t connections = 0;
  std::size_t connections_per_client = 0;        // at most `connections`
  std::uint64_t buffered_bodies = 0;             // bytes
  std::uint64_t buffered_bodies_per_client = 0;  // at most `buffered_bodies`
  // How long a connection may take to send a request head (from its opening or its last
  // answer), and a request body (from its head); then it is closed (docs/configuration.md,
  // "Connections and bodies").
  Duration header_timeout = std::chrono::seconds(10);
  Duration body_timeout = std::chrono::seconds(30);

  friend bool operator==(const ListenerLimits&, const ListenerLimits&) = default;
};

// `limits`, for the client listener. buffered_bodies_per_client is at least every route's
// max_body: by default 32MiB or the largest max_body, whichever is more (but at most
// buffered_bodies).
inline constexpr ListenerLimits kClientLimits{4096, 256, 256ull << 20, 32ull << 20};
// `admin.limits`. The admin listener reads a body of 1MiB at most (kAdminBodyLimit), so each
// client may hold at least that. Services call the control API with a connection per call in
// flight (a Java service's ControlApiStore from each of its threads), so one client may hold as
// many connections as on the client listener.
inline constexpr ListenerLimits kAdminLimits{1024, 256, 64ull << 20, 16ull << 20};
inline constexpr std::uint64_t kAdminBodyLimit = 1ull << 20;

// The roles of an admin token (docs/admin.md, "Tokens and roles"), a bit set: `control`
// for the control API (begin, commit, release, abandon, extend, tokens, locks) and reading
// one record, `operator` for the records (list, get, delete) and the operator's page.
// Neither implies the other.
inline constexpr unsigned kRoleControl = 1;
inline constexpr unsigned kRoleOperator = 2;

// One of `admin.tokens`: a named token from the environment with its roles.
struct AdminTokenConfig {
  std::string name;    // in the audit line and idem_admin_actions_total
  std::string env;     // the variable that holds it
  std::string value;   // its value at load time; never empty
  unsigned roles = 0;  // kRoleControl | kRoleOperator, at least one
};

// `tls`: the client listener speaks TLS with this certificate chain and private key (PEM
// files), read at start and again on SIGHUP (docs/configuration.md, "TLS on the client listener"). Empty:
// plain HTTP. The lines are where the keys were read, for the errors about the files.
struct ListenerTls {
  std::string cert_file;
  std::string key_file;
  int cert_line = 0;
  int key_line = 0;
  bool on() const { return !cert_file.empty(); }
};

struct AdminConfig {
  ListenAddress listen{"127.0.0.1", 9901};
  std::string token_env;  // the variable named by admin.token_env, or "" for none
  std::string token;      // its value at load time; never empty when token_env is set
  // `admin.tokens`. admin.token_env's token has every role and the name "admin".
  std::vector<AdminTokenConfig> tokens;
  ListenerLimits limits = kAdminLimits;

  // Whether the listener takes tokens (either key): then any address may be bound.
  bool has_tokens() const { return !token.empty() || !tokens.empty(); }
};

// `tokens` (docs/http.md, "One-time tokens"): the tokens endpoint, served only when a
// route has `key: token` (Config::issues_tokens), and its bounds (token_limits.h).
struct TokensConfig {
  Duration ttl = std::chrono::minutes(10);  // at least 1s
  Subject subject;                          // defaults to defaults.subject
  std::string path = "/_idem/tokens";       // where POST issues a token
  std::uint64_t max_live = 100'000;         // tokens issued within the last ttl, at most
  std::uint64_t per_client = 60;            // tokens per client and minute; 0: unbounded

  TokenLimits limits() const { return {max_live, per_client, ttl}; }
};

// `replay_cache` (docs/gateway.md, "Replays from memory").
struct ReplayCacheConfig {
  std::size_t max_bytes = 16u << 20;  // 0 turns the cache off
  // On stores shared by many gateways (Redis, PostgreSQL, MySQL): how long a cached result is
  // served without asking the store, so how long a removal on another instance may go
  // unseen. Memory and SQLite stores are exact and ignore it.
  Duration shared_ttl = std::chrono::seconds(1);

  friend bool operator==(const ReplayCacheConfig&, const ReplayCacheConfig&) = default;
};

// One of `upstreams` (docs/configuration.md, "Upstreams"): a service routes name with
// `upstream: NAME`, with its own keep-alive pool.
struct NamedUpstream {
  std::string name;  // letters, digits, '-', '_' and '.'
  UpstreamUrl url;
  // `timeout`: upstream_timeout of the routes naming it that set none of their own.
  std::optional<Duration> timeout;
  // `idle_timeout`: upstream_idle_timeout for its connections.
  Duration idle = std::chrono::seconds(3);
  UpstreamTls tls;  // `tls`, for an https:// url
  int line = 0;     // where it was written, for warnings

  friend bool operator==(const NamedUpstream&, const NamedUpstream&) = default;
};

struct Config {
  std::string source;  // the file it was read from, for errors found later ("" without one)
  ListenAddress listen{"127.0.0.1", 8080};
  std::optional<UpstreamUrl> upstream;  // required to serve: from the file or --upstream
  // `upstream_idle_timeout`: how long an idle upstream connection is kept for reuse (0:
  // never reused). Keep it below the upstream's own keep-alive timeout; a shorter
  // Keep-Alive: timeout=N announced by the upstream is honoured too.
  Duration upstream_idle = std::chrono::seconds(3);
  UpstreamTls upstream_tls;  // `upstream_tls`, for an https:// upstream
  // `upstreams`, in the order written; names unique. Route::upstream names one of them.
  std::vector<NamedUpstream> upstreams;
  const NamedUpstream* named_upstream(std::string_view name) const;
  std::string store = "sqlite:./idem.db";
  AdminConfig admin;
  ListenerLimits limits = kClientLimits;  // the client listener's
  ListenerTls tls;                        // the client listener's
  Policy defaults;
  TokensConfig tokens;
  ReplayCacheConfig replay_cache;
  // `trusted_proxies`: the peers whose forwarding fields are believed (forwarding.h);
  // empty trusts none.
  TrustedProxies trusted_proxies;
  // The `jwt` block's keys and checks (docs/configuration.md, "Principals from a JWT"), read
  // with the config; null without the block.
  std::shared_ptr<const JwtVerifier> jwt;
  // In order; the first match wins. Never empty: without `routes` the default route
  // (default_route(defaults)).
  std::vector<Route> routes;

  // Whether some route takes one-time tokens (`key: token`): only then is the tokens
  // endpoint served.
  bool issues_tokens() const;
  // Whether `routes` was written (and not empty); without it the default route is used.
  bool routes_written = false;
  // What a valid config most likely does not mean (docs/configuration.md, "What idem check
  // warns of"): a route that can never match, because an earlier one matches every
  // request it would; a route on a safe method. `idem check` prints them as warnings
  // (errors with --strict); `idem serve` prints them and runs.
  std::vector<ConfigError> advice;
  // No upstream and no routes: `idem serve` opens the admin listener alone, for the control
  // API, records and tokens (docs/control-api.md, "A gateway for the control API alone").
  bool control_only() const { return !upstream && !routes_written && upstreams.empty(); }
};

// What `idem serve` runs without a config file: listen 127.0.0.1:8080, admin
// 127.0.0.1:9901 without a token, store sqlite:./idem.db, every default, the default route
// and no upstream (to be given by --upstream).
Config default_config();

// Reads the YAML text of a config; `name` is the file name used in messages. Every key is
// read and checked; unknown or repeated keys, values of the wrong type or out of range, and
// the rules that tie settings together (token_env set and non-empty; every duration at most
// 3650d and every size at most 1GiB; a listener's per-client caps at most its caps, and a
// client's share of the body budget holding the largest body the listener reads (every
// route's max_body, the admin listener's 1MiB); lease ≥ 100ms; retention, upstream_timeout > 0;
// tokens.ttl ≥ 1s; no `key: token` with `mode: lock`; no route-level `subject` on a token
// route; unique route names; templates naming path parameters the route has) throw
// ConfigError, as do YAML syntax errors and more than one YAML document. An empty text is
// the default config.
// `${NAME}` in a value is replaced by the variable's value (not read again for `${`), `$${`
// is a literal `${`, and a `$` before anything else is itself; a `${` without its `}` or
// with a name that is not letters, digits and `_` (not starting with a digit) is an error.
Config load_config_text(std::string_view yaml, std::string_view name, const ConfigEnvironment& env = {});

// load_config_text of the file at `path`; ConfigError also when it cannot be read.
Config load_config_file(const std::string& path, const ConfigEnvironment& env = {});

// Command-line flags (docs/configuration.md, "Command line"), which override the config file.
struct CliOverrides {
  std::optional<std::string> listen{};    // --listen ADDR
  std::optional<std::string> upstream{};  // --upstream URL
  std::optional<std::string> store{};     // --store URI
  std::optional<std::string> admin{};     // --admin ADDR
};

// Applies the flags that are set, validated as the config keys are; ConfigError names the
// flag ("--upstream: scheme 'ftp' is not supported ...").
void apply_overrides(Config& config, const CliOverrides& flags);

// What a stored response adds to its body: its status and headers, which the upstream client
// reads up to 64 KiB of (a longer response head is refused).
inline constexpr std::uint64_t kStoredHeadersMargin = 64 * 1024;

// ConfigError unless the store holds every route's largest stored response: a route's
// max_result plus kStoredHeadersMargin must be at most `store_max_result`
// (Store::max_result_bytes() of the store it will run on, `store_name` its traits' name).
// The error names the route and the line that set max_result (docs/configuration.md).
void require_store_holds_results(const Config& config, std::uint64_t store_max_result,
                                 std::string_view store_name);

// ConfigError unless the config can be served: routes that name no upstream need the default
// one (from the file or --upstream), and so does a config without a file (`source` empty); a
// file without upstream, upstreams and routes is control-only (Config::control_only). `idem check` does not
// require one, since
// --upstream may supply it.
void require_upstream(const Config& config);

}  // namespace idem::gateway
