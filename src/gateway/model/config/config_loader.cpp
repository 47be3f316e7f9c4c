// load_config_text: reads the document key by key through a YamlReader, so every error
// names its line and dotted key, then checks the rules that tie settings together.
#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/model/config/config.h"
#include "gateway/model/config/config_checks.h"
#include "gateway/model/config/yaml_reader.h"
#include "gateway/model/hop_by_hop.h"
#include "gateway/model/jwt.h"
#include "gateway/model/key.h"
#include "util/ascii.h"

namespace idem::gateway {
namespace {

const Names kTopKeys = {"listen",          "upstream",     "upstream_idle_timeout",
                        "upstream_tls",    "upstreams",    "store",
                        "admin",           "limits",       "defaults",
                        "tokens",          "replay_cache", "routes",
                        "trusted_proxies", "jwt",          "tls"};
const Names kUpstreamKeys = {"url", "timeout", "idle_timeout", "tls"};
const Names kTlsKeys = {"ca_file", "server_name", "insecure_skip_verify"};
const Names kLimitKeys = {"connections",     "connections_per_client",
                          "buffered_bodies", "buffered_bodies_per_client",
                          "header_timeout",  "body_timeout"};
constexpr Duration kMaxClientTimeout = std::chrono::hours(1);
constexpr std::uint64_t kMaxConnections = 1u << 20;
constexpr std::uint64_t kDefaultBodiesPerClient = kClientLimits.buffered_bodies_per_client;
const Names kPolicyKeys = {"retention",   "lease",          "wait",         "upstream_timeout",
                           "subject",     "on_store_error", "on_duplicate", "on_uncertain",
                           "fingerprint", "cache_5xx",      "max_body",     "max_result",
                           "release_on",  "success_when",   "principal",    "status"};
const Names kStatusKeys = {"path", "timeout"};
const Names kJwtKeys = {"algorithms", "key_file", "jwks_file", "issuer",
                        "audience",   "claim",    "leeway",    "header"};
// The largest `jwt.leeway`: clocks further apart than this are a fault to fix, not to allow.
constexpr Duration kMaxLeeway = std::chrono::minutes(10);
const Names kRouteKeys = {"name", "match",           "key",     "key_space", "required",
                          "mode", "jsonrpc_methods", "upstream"};

constexpr Duration kPositive(1);
// The most `tokens.max_live` and `tokens.per_client` may be: far past what any store holds
// comfortably, low enough that a typo of a few digits too many is caught.
constexpr std::uint64_t kMaxLiveTokens = 100'000'000;

// Why `path` cannot be the tokens endpoint's, or nullopt: it is matched exactly against a
// request's path, so it is a plain path: '/' and then letters, digits and - . _ ~ ! $ & ' (
// ) * + , ; = : @ and '/', without percent-encoding, empty or dot segments.
std::optional<std::string> endpoint_path_error(std::string_view path) {
  if (!path.starts_with('/')) return "must start with '/'";
  if (path.size() > 256) return "is longer than 256 characters";
  for (char c : path) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       std::string_view("-._~!$&'()*+,;=:@/").find(c) != std::string_view::npos;
    if (!plain) return "may hold letters, digits and -._~!$&'()*+,;=:@/ only (no percent-encoding or query)";
  }
  for (std::string_view rest = path.substr(1);;) {
    const auto slash = rest.find('/');
    const std::string_view segment = rest.substr(0, slash);
    if (segment.empty() && slash != std::string_view::npos) return "has an empty segment ('//')";
    if (segment == "." || segment == "..") return "has a dot segment";
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return std::nullopt;
}

using util::is_token;

// Why a route may not read the hop-by-hop field `name` (docs/gateway.md, "One request, one
// reading").
std::string never_forwarded(std::string_view name) {
  return std::string(name) +
         " is a hop-by-hop field, which the gateway never forwards: the service would not see the value the "
         "request is identified by";
}

bool is_route_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Where the fingerprint templates a route uses were written, for errors found when they
// are checked against the route (a template in `defaults` is checked against every route).
struct PolicyOrigin {
  std::vector<Where> fields;
  bool from_defaults = true;
};

class ConfigReader : public YamlReader {
 public:
  using YamlReader::YamlReader;

  Config read(const YAML::Node& root);

 private:
  void read_jwt(const Entry& e, Config& c);
  // The claim of `jwt` or `jwt:CLAIM`, for subject and principal; needs the `jwt` block.
  std::string jwt_claim(const Entry& e, const std::string& value) const;
  Subject subject(const Entry& e) const;
  Principal principal(const Entry& e) const;
  KeyTemplate key_template(const Entry& e) const;
  FingerprintRule fingerprint(const Entry& e, PolicyOrigin& origin) const;
  void read_policy(const std::vector<Entry>& es, Policy& p, PolicyOrigin& origin) const;
  std::vector<unsigned> release_on(const Entry& e) const;
  SuccessRule success_when(const Entry& e) const;
  StatusEndpoint status_endpoint(const Entry& e) const;
  // The items of a list, or the value itself when it is a single scalar.
  std::vector<Entry> one_or_more(const Entry& e) const;
  void read_admin(const Entry& admin, Config& c) const;
  void read_tls(const Entry& tls, Config& c) const;
  // `limits` or `admin.limits` into `l`; the keys it gives.
  std::vector<Entry> read_limits(const Entry& e, ListenerLimits& l) const;
  // The rules between a listener's limits (`given` at `at`), and that one client's share of
  // the body budget holds `largest_body` (`body_of` names it, `remedy` ends the error).
  void check_limits(const ListenerLimits& l, const Entry& at, const std::vector<Entry>& given,
                    std::uint64_t largest_body, const std::string& body_of, const std::string& remedy) const;
  void read_admin_tokens(const Entry& list, Config& c) const;
  void read_tokens(const Entry& tokens, Config& c) const;
  void read_replay_cache(const Entry& cache, Config& c) const;
  void read_trusted_proxies(const Entry& list, Config& c) const;
  void read_upstreams(const Entry& map, Config& c) const;
  // `upstream_tls` or `upstreams.NAME.tls`, for the upstream at `url` (nullopt: not known here,
  // as an upstream given by --upstream).
  UpstreamTls read_tls(const Entry& e, const std::optional<UpstreamUrl>& url, Config& c) const;
  std::vector<std::string> methods(const Entry& e) const;
  KeyRule key_rule(const Entry& e) const;
  Route read_route(const Entry& item, const Config& c, const PolicyOrigin& defaults, Where& name_at,
                   Where& match_at) const;
  // Config::advice of the routes (`match_at`: where each route's match was written).
  void advise_on_routes(Config& c, const std::vector<Where>& match_at) const;
  void check_templates(const KeyTemplate& t, const Route& r, const Where& w, bool from_defaults) const;
  void check_fingerprint(const Route& r, const PolicyOrigin& origin) const;

  std::shared_ptr<const JwtVerifier> jwt_;  // the `jwt` block's, once read
};

void ConfigReader::read_jwt(const Entry& block, Config& c) {
  std::vector<Entry> es = entries(block.value, where(block), {kJwtKeys});
  JwtSettings settings;
  const Entry& algorithms = require(es, "algorithms", where(block));
  for (const Entry& item : one_or_more(algorithms)) {
    const std::string name = scalar(item, "HS256, RS256 or ES256");
    const std::optional<JwtAlgorithm> a = jwt_algorithm(name);
    if (!a)
      fail(item, name == "none" ? "alg none (an unsigned token) is never accepted"
                                : "expected HS256, RS256 or ES256, got '" + name + "'");
    if (std::ranges::find(settings.algorithms, *a) == settings.algorithms.end())
      settings.algorithms.push_back(*a);
  }
  if (const Entry* e = find(es, "header")) {
    settings.header = scalar(*e, "a header name such as Authorization");
    if (!is_token(settings.header)) fail(*e, "'" + settings.header + "' is not a header name");
    if (is_hop_by_hop(settings.header)) fail(*e, never_forwarded(settings.header));
  }
  if (const Entry* e = find(es, "issuer")) settings.issuer = scalar(*e, "the issuer (iss) tokens must name");
  if (const Entry* e = find(es, "audience"))
    for (const Entry& item : one_or_more(*e)) settings.audience.push_back(scalar(item, "an audience (aud)"));
  if (const Entry* e = find(es, "claim")) {
    settings.claim = scalar(*e, "a claim name such as sub");
    if (settings.claim.empty()) fail(*e, "a claim name is not empty");
  }
  if (const Entry* e = find(es, "leeway")) {
    const Duration leeway = duration(*e, Duration::zero(), "must not be negative");
    if (leeway > kMaxLeeway) fail(*e, "must be at most 10m");
    settings.leeway_seconds = std::chrono::duration_cast<std::chrono::seconds>(leeway).count();
  }
  const Entry* key_file = find(es, "key_file");
  const Entry* jwks_file = find(es, "jwks_file");
  if ((key_file == nullptr) == (jwks_file == nullptr))
    fail(key_file ? *key_file : block,
         "give either key_file (a PEM public key or an HS256 secret) or jwks_file");
  const Entry& file = key_file ? *key_file : *jwks_file;
  const std::string path = scalar(file, "a file name");
  try {
    jwt_ = JwtVerifier::load(std::move(settings), key_file ? path : "", key_file ? "" : path);
  } catch (const std::runtime_error& e) {
    fail(file, e.what());
  }
  c.jwt = jwt_;
}

std::string ConfigReader::jwt_claim(const Entry& e, const std::string& value) const {
  if (!jwt_) fail(e, value + " needs the top-level jwt block (its keys and checks)");
  std::string claim = value == "jwt" ? jwt_->settings().claim : value.substr(4);
  if (claim.empty()) fail(e, "jwt: names no claim");
  return claim;
}

Subject ConfigReader::subject(const Entry& e) const {
  std::string s = scalar(e, "none, header:NAME, header-hash:NAME or jwt");
  if (s == "none") return {};
  if (s == "jwt" || s.starts_with("jwt:")) {
    std::string claim = jwt_claim(e, s);
    return {Subject::Kind::jwt, jwt_->settings().header, std::move(claim), jwt_};
  }
  for (auto [prefix, kind] : {std::pair{std::string_view("header:"), Subject::Kind::header},
                              std::pair{std::string_view("header-hash:"), Subject::Kind::header_hash}}) {
    if (!s.starts_with(prefix)) continue;
    std::string name = s.substr(prefix.size());
    if (!is_token(name)) fail(e, "'" + name + "' is not a header name");
    if (is_hop_by_hop(name)) fail(e, never_forwarded(name));
    return {kind, name};
  }
  fail(e, "expected none, header:NAME, header-hash:NAME or jwt, got '" + s + "'");
}

Principal ConfigReader::principal(const Entry& e) const {
  std::string s = scalar(e, "authorization, header:NAME, jwt, subject or none");
  if (s == "authorization") return {};
  if (s == "jwt" || s.starts_with("jwt:")) {
    std::string claim = jwt_claim(e, s);
    return {Principal::Kind::jwt, jwt_->settings().header, std::move(claim), jwt_};
  }
  if (s == "subject") return {Principal::Kind::subject, {}};
  if (s == "none") return {Principal::Kind::none, {}};
  if (s.starts_with("header:")) {
    std::string name = s.substr(7);
    if (!is_token(name)) fail(e, "'" + name + "' is not a header name");
    if (is_hop_by_hop(name)) fail(e, never_forwarded(name));
    return {Principal::Kind::header, name};
  }
  fail(e, "expected authorization, header:NAME, jwt, subject or none, got '" + s + "'");
}

KeyTemplate ConfigReader::key_template(const Entry& e) const {
  Result<KeyTemplate> t = KeyTemplate::parse(scalar(e, "a template such as \"{json.id}\""));
  if (!t) fail(e, t.status().message());
  return std::move(*t);
}

FingerprintRule ConfigReader::fingerprint(const Entry& e, PolicyOrigin& origin) const {
  FingerprintRule rule;
  origin = {{}, false};
  if (e.value.IsSequence()) {
    rule.kind = FingerprintRule::Kind::fields;
    for (const Entry& item : items(e)) {
      KeyTemplate t = key_template(item);
      if (!t.has_placeholders())
        fail(item, "a template without {placeholders} is the same for every request");
      rule.fields.push_back(std::move(t));
      origin.fields.push_back(where(item));
    }
    if (rule.fields.empty()) fail(e, "an empty list of templates; give some, or write none");
    return rule;
  }
  const std::string expected = "body, json, none or a list of templates such as [\"{json.amount}\"]";
  std::string s = scalar(e, expected.c_str());
  if (s == "body")
    rule.kind = FingerprintRule::Kind::body;
  else if (s == "json")
    rule.kind = FingerprintRule::Kind::json;
  else if (s == "none")
    rule.kind = FingerprintRule::Kind::none;
  else
    fail(e, "expected " + expected + ", got '" + s + "'");
  return rule;
}

std::vector<Entry> ConfigReader::one_or_more(const Entry& e) const {
  std::vector<Entry> list = e.value.IsSequence() ? items(e) : std::vector<Entry>{e};
  if (list.empty()) fail(e, "an empty list");
  return list;
}

std::vector<unsigned> ConfigReader::release_on(const Entry& e) const {
  std::vector<unsigned> statuses;
  for (const Entry& item : one_or_more(e)) statuses.push_back(static_cast<unsigned>(count(item, 200, 599)));
  return statuses;
}

StatusEndpoint ConfigReader::status_endpoint(const Entry& e) const {
  std::vector<Entry> es = entries(e.value, where(e), {kStatusKeys});
  const Entry* path = find(es, "path");
  if (!path) fail(e, "status needs path: the service's status endpoint, such as /orders/by-key/{key}");
  StatusEndpoint s;
  s.path = scalar(*path, "a path such as /orders/by-key/{key}");
  if (auto why = status_path_error(s.path)) fail(*path, *why);
  if (const Entry* t = find(es, "timeout")) s.timeout = duration(*t, kPositive, "must be greater than 0");
  return s;
}

SuccessRule ConfigReader::success_when(const Entry& e) const {
  std::vector<Entry> es = entries(e.value, where(e), {{"json", "equals", "text"}});
  const Entry* json = find(es, "json");
  const Entry* equals = find(es, "equals");
  const Entry* text = find(es, "text");
  SuccessRule rule;
  if (text) {
    if (json || equals) fail(*text, "text is a rule of its own: give either text, or json with equals");
    rule.kind = SuccessRule::Kind::text;
    for (const Entry& item : one_or_more(*text)) rule.values.push_back(scalar(item, "the text of a success"));
    return rule;
  }
  if (!json) fail(e, "expected json (with equals) or text");
  if (!equals) fail(*json, "json needs equals: the member's values that mean success, such as [0, 200]");
  rule.kind = SuccessRule::Kind::json;
  rule.path_text = scalar(*json, "a member such as code or data.status");
  Result<std::vector<std::string>> path = success_path(rule.path_text);
  if (!path) fail(*json, path.status().message());
  rule.json_path = std::move(*path);
  for (const Entry& item : one_or_more(*equals)) {
    const std::string written = scalar(item, "a value such as 0, \"0\" or true");
    // A quoted scalar is a string ("0"); a plain one a number or a literal when it reads as one.
    Result<std::string> v = success_value(written, item.value.Tag() == "!");
    if (!v) fail(item, v.status().message() + "; quote it for a string");
    rule.values.push_back(std::move(*v));
  }
  return rule;
}

void ConfigReader::read_policy(const std::vector<Entry>& es, Policy& p, PolicyOrigin& origin) const {
  for (const Entry& e : es) {
    const std::string& k = e.key.Scalar();
    if (k == "retention")
      p.retention = duration(e, kPositive, "must be greater than 0");
    else if (k == "lease")
      p.lease = duration(e, kMinLease, "must be at least 100ms");
    else if (k == "wait")
      p.wait = duration(e, Duration::zero(), "must not be negative");
    else if (k == "upstream_timeout")
      p.upstream_timeout = duration(e, kPositive, "must be greater than 0");
    else if (k == "subject")
      p.subject = subject(e);
    else if (k == "principal")
      p.principal = principal(e);
    else if (k == "on_store_error")
      p.on_store_error = static_cast<OnStoreError>(choice(e, {"reject", "pass"}));
    else if (k == "on_duplicate")
      p.on_duplicate = static_cast<OnDuplicate>(choice(e, {"replay", "reject"}));
    else if (k == "on_uncertain")
      p.on_uncertain = static_cast<OnUncertain>(choice(e, {"hold", "retry"}));
    else if (k == "status")
      p.status = status_endpoint(e);
    else if (k == "fingerprint")
      p.fingerprint = fingerprint(e, origin);
    else if (k == "cache_5xx")
      p.cache_5xx = boolean(e);
    else if (k == "release_on")
      p.release_on = release_on(e);
    else if (k == "success_when")
      p.success_when = success_when(e);
    else if (k == "max_body")
      p.max_body = size(e);
    else if (k == "max_result") {
      p.max_result = size(e);
      p.max_result_line = where(e).line;
      p.max_result_key = e.path;
    }
  }
}

// A size as a config would write it: "32MiB", "1536KiB", "100B".
std::string size_text(std::uint64_t bytes) {
  for (auto [shift, unit] : {std::pair{30, "GiB"}, std::pair{20, "MiB"}, std::pair{10, "KiB"}})
    if (bytes != 0 && bytes % (std::uint64_t{1} << shift) == 0) return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes) + "B";
}

std::vector<Entry> ConfigReader::read_limits(const Entry& e, ListenerLimits& l) const {
  std::vector<Entry> es = entries(e.value, where(e), {kLimitKeys});
  // A per-client cap left out is its default, within the listener's cap.
  if (const Entry* c = find(es, "connections")) l.connections = count(*c, 1, kMaxConnections);
  if (const Entry* c = find(es, "connections_per_client"))
    l.connections_per_client = count(*c, 1, kMaxConnections);
  else
    l.connections_per_client = std::min(l.connections_per_client, l.connections);
  if (const Entry* b = find(es, "buffered_bodies")) l.buffered_bodies = size(*b);
  if (const Entry* b = find(es, "buffered_bodies_per_client"))
    l.buffered_bodies_per_client = size(*b);
  else
    l.buffered_bodies_per_client = std::min(l.buffered_bodies_per_client, l.buffered_bodies);
  for (auto [name, timeout] :
       {std::pair{"header_timeout", &l.header_timeout}, {"body_timeout", &l.body_timeout}})
    if (const Entry* t = find(es, name)) {
      *timeout = duration(*t, std::chrono::seconds(1), "must be at least 1s");
      if (*timeout > kMaxClientTimeout) fail(*t, "must be at most 1h");
    }
  return es;
}

void ConfigReader::check_limits(const ListenerLimits& l, const Entry& at, const std::vector<Entry>& given,
                                std::uint64_t largest_body, const std::string& body_of,
                                const std::string& remedy) const {
  // A rule broken by a default is told at the key that set the other side.
  const auto at_key = [&](const char* name) {
    const Entry* e = find(given, name);
    return e ? where(*e) : Where{where(at).line, where(at).path + "." + name};
  };
  if (l.connections_per_client > l.connections)
    fail(at_key("connections_per_client"),
         "must be at most connections (" + std::to_string(l.connections) + ")");
  const Entry* per_client = find(given, "buffered_bodies_per_client");
  if (per_client && l.buffered_bodies_per_client > l.buffered_bodies)
    fail(*per_client, "must be at most buffered_bodies (" + size_text(l.buffered_bodies) + ")");
  if (l.buffered_bodies_per_client < largest_body)
    fail(at_key(per_client ? "buffered_bodies_per_client" : "buffered_bodies"),
         size_text(l.buffered_bodies_per_client) + " cannot hold " + body_of +
             ", so no such body could be received: raise it" + remedy);
}

// `tls`: both files, or neither (docs/configuration.md, "TLS on the client listener"). Whether they can be
// read and belong together is checked where they are loaded (tls_context.h).
void ConfigReader::read_tls(const Entry& tls, Config& c) const {
  std::vector<Entry> es = entries(tls.value, where(tls), {{"cert_file", "key_file"}});
  const Entry* cert = find(es, "cert_file");
  const Entry* key = find(es, "key_file");
  if (!cert || !key)
    fail(tls, std::string("needs both cert_file and key_file (") + (cert ? "key_file" : "cert_file") +
                  " is missing)");
  c.tls.cert_file = scalar(*cert, "the path of a PEM certificate chain file");
  c.tls.key_file = scalar(*key, "the path of a PEM private key file");
  if (c.tls.cert_file.empty()) fail(*cert, "must name a file");
  if (c.tls.key_file.empty()) fail(*key, "must name a file");
  c.tls.cert_line = where(*cert).line;
  c.tls.key_line = where(*key).line;
}

void ConfigReader::read_admin(const Entry& admin, Config& c) const {
  std::vector<Entry> es = entries(admin.value, where(admin), {{"listen", "token_env", "tokens", "limits"}});
  if (const Entry* e = find(es, "limits")) {
    const std::vector<Entry> given = read_limits(*e, c.admin.limits);
    check_limits(c.admin.limits, *e, given, kAdminBodyLimit,
                 "the largest admin request body (" + size_text(kAdminBodyLimit) + ")", "");
  }
  const Entry* listen = find(es, "listen");
  if (listen) {
    Result<ListenAddress> a = parse_listen_address(scalar(*listen, "HOST:PORT or :PORT"));
    if (!a) fail(*listen, a.status().message());
    c.admin.listen = *a;
  }
  if (const Entry* e = find(es, "token_env")) {
    std::string var = scalar(*e, "the name of an environment variable");
    if (var.empty() || var.find('=') != std::string::npos) fail(*e, "'" + var + "' is not a variable name");
    std::optional<std::string> value = variable(*e, var);
    if (value && value->empty()) fail(*e, "the environment variable " + var + " is empty");
    c.admin.token_env = var;
    // Unset, under a lenient environment (idem check): a token is configured all the same.
    c.admin.token = value.value_or("(unset)");
  }
  if (const Entry* e = find(es, "tokens")) read_admin_tokens(*e, c);
  if (auto why = config_checks::admin_exposed(c)) fail(listen ? where(*listen) : where(admin), *why);
}

void ConfigReader::read_admin_tokens(const Entry& list, Config& c) const {
  if (list.value.IsNull() || (list.value.IsSequence() && list.value.size() == 0))
    fail(list, "an empty list of tokens; give some, or leave admin.tokens out");
  for (const Entry& item : items(list)) {
    if (!item.value.IsMap()) fail(item, "expected a token: a mapping with name, env and roles");
    std::vector<Entry> es = entries(item.value, where(item), {{"name", "env", "roles"}});
    AdminTokenConfig t;
    const Entry& name = require(es, "name", where(item));
    t.name = scalar(name, "a token name");
    if (!is_route_name(t.name) || t.name.size() > 64)
      fail(name, "a token name is 1-64 letters, digits, '-', '_' and '.'");
    if (t.name == "admin" && !c.admin.token_env.empty())
      fail(name, "'admin' names admin.token_env's token; choose another name");
    for (const AdminTokenConfig& other : c.admin.tokens)
      if (other.name == t.name) fail(name, "token name '" + t.name + "' is already used");
    const Entry& env = require(es, "env", where(item));
    t.env = scalar(env, "the name of an environment variable");
    if (t.env.find('=') != std::string::npos) fail(env, "'" + t.env + "' is not a variable name");
    std::optional<std::string> value = variable(env, t.env);
    if (value && value->empty()) fail(env, "the environment variable " + t.env + " is empty");
    // Unset, under a lenient environment (idem check): a token is configured all the same.
    t.value = value.value_or("(unset)");
    const Entry& roles = require(es, "roles", where(item));
    std::vector<Entry> named = roles.value.IsSequence() ? items(roles) : std::vector<Entry>{roles};
    if (named.empty()) fail(roles, "an empty list of roles allows nothing; give control, operator or both");
    for (const Entry& r : named)
      t.roles |= choice(r, {"control", "operator"}) == 0 ? kRoleControl : kRoleOperator;
    c.admin.tokens.push_back(std::move(t));
  }
}

void ConfigReader::read_tokens(const Entry& tokens, Config& c) const {
  std::vector<Entry> es =
      entries(tokens.value, where(tokens), {{"ttl", "subject", "path", "max_live", "per_client"}});
  if (const Entry* e = find(es, "ttl"))
    c.tokens.ttl = duration(*e, std::chrono::seconds(1), "must be at least 1s");
  if (const Entry* e = find(es, "subject")) c.tokens.subject = subject(*e);
  if (const Entry* e = find(es, "path")) {
    c.tokens.path = scalar(*e, "a path such as /_idem/tokens");
    if (auto why = endpoint_path_error(c.tokens.path)) fail(*e, *why);
  }
  if (const Entry* e = find(es, "max_live")) c.tokens.max_live = count(*e, 1, kMaxLiveTokens);
  if (const Entry* e = find(es, "per_client")) c.tokens.per_client = count(*e, 0, kMaxLiveTokens);
}

void ConfigReader::read_replay_cache(const Entry& cache, Config& c) const {
  std::vector<Entry> es = entries(cache.value, where(cache), {{"max_bytes", "shared_ttl"}});
  if (const Entry* e = find(es, "max_bytes")) c.replay_cache.max_bytes = size(*e);
  if (const Entry* e = find(es, "shared_ttl"))
    c.replay_cache.shared_ttl = duration(*e, Duration::zero(), "must not be negative");
}

void ConfigReader::read_trusted_proxies(const Entry& list, Config& c) const {
  if (list.value.IsNull()) return;
  std::vector<IpRange> ranges;
  for (const Entry& item : items(list)) {
    Result<IpRange> r = parse_ip_range(scalar(item, "an address or a CIDR range such as 10.0.0.0/8"));
    if (!r) fail(item, r.status().message());
    ranges.push_back(*r);
  }
  c.trusted_proxies = TrustedProxies(std::move(ranges));
}

std::vector<std::string> ConfigReader::methods(const Entry& e) const {
  std::vector<Entry> list = e.value.IsSequence() ? items(e) : std::vector<Entry>{e};
  if (list.empty()) fail(e, "an empty list of methods matches nothing");
  std::vector<std::string> out;
  for (const Entry& item : list) {
    std::string m = scalar(item, "a method such as POST, or a list of methods");
    if (!is_token(m)) fail(item, "'" + m + "' is not an HTTP method");
    // Methods are case-sensitive on the wire; a config saying `post` means POST.
    for (char& ch : m) ch = (ch >= 'a' && ch <= 'z') ? static_cast<char>(ch - 'a' + 'A') : ch;
    out.push_back(std::move(m));
  }
  return out;
}

KeyRule ConfigReader::key_rule(const Entry& e) const {
  std::string s = scalar(e, "header:NAME, token, or a template such as \"pay:{json.id}\"");
  KeyRule k;
  if (s == "token") {
    k.kind = KeyRule::Kind::token;
    return k;
  }
  if (s.starts_with("header:") && is_token(s.substr(7))) {
    k.header = s.substr(7);
    if (is_hop_by_hop(k.header)) fail(e, never_forwarded(k.header));
    return k;
  }
  k.kind = KeyRule::Kind::templated;
  k.key_template = key_template(e);
  std::size_t literal_size = 0;
  for (const KeyTemplate::Part& part : k.key_template.parts()) {
    if (!part.literal) continue;
    literal_size += part.text.size();
    for (char c : part.text) {
      if (c < 0x21 || c > 0x7E)
        fail(e, "keys are visible ASCII: the template's text may not hold spaces or other characters");
    }
  }
  if (literal_size > kMaxKeyLength) fail(e, "the template's text alone is longer than a key may be (255)");
  if (auto why = unseparated_placeholders(k.key_template)) fail(e, *why);
  return k;
}

void ConfigReader::check_templates(const KeyTemplate& t, const Route& r, const Where& w,
                                   bool from_defaults) const {
  const std::string of_route = from_defaults ? " of route '" + r.name + "'" : "";
  for (const KeyTemplate::Part& part : t.parts()) {
    if (part.literal) continue;
    if (part.source == KeyTemplate::Source::header && is_hop_by_hop(part.name))
      fail(w, never_forwarded(part.name));
    if (part.source == KeyTemplate::Source::path && !r.path.has_param(part.name)) {
      fail(w, part.text + " is not a parameter of match.path \"" + r.path.text() + "\"" + of_route);
    }
    if (part.source == KeyTemplate::Source::subject && r.policy.subject.kind == Subject::Kind::none) {
      fail(w, "{subject} needs a subject (header:NAME or header-hash:NAME)" +
                  (from_defaults ? ", and route '" + r.name + "' has none" : std::string()));
    }
  }
}

void ConfigReader::check_fingerprint(const Route& r, const PolicyOrigin& origin) const {
  if (r.mode == Mode::lock) return;  // a lock does not fingerprint
  const std::vector<KeyTemplate>& fields = r.policy.fingerprint.fields;
  for (std::size_t i = 0; i < fields.size() && i < origin.fields.size(); ++i) {
    check_templates(fields[i], r, origin.fields[i], origin.from_defaults);
  }
}

Route ConfigReader::read_route(const Entry& item, const Config& c, const PolicyOrigin& defaults,
                               Where& name_at, Where& match_at) const {
  const Where at = where(item);
  if (!item.value.IsMap()) fail(at, "expected a route: a mapping with name and match");
  std::vector<Entry> es = entries(item.value, at, {kRouteKeys, kPolicyKeys});
  Route r;
  r.policy = c.defaults;

  const Entry& name = require(es, "name", at);
  r.name = scalar(name, "a route name");
  if (!is_route_name(r.name)) fail(name, "a route name is letters, digits, '-', '_' and '.'");
  name_at = where(name);
  r.key_space = r.name;
  if (const Entry* e = find(es, "key_space")) {
    r.key_space = scalar(*e, "a key space name");
    if (!is_key_space(r.key_space)) fail(*e, "a key space is 1-64 letters, digits, '-', '_' and '.'");
  } else if (!is_key_space(r.key_space)) {
    fail(name,
         "a route's records are kept under its name, and a key space is at most 64 characters: give "
         "this route a shorter name or a key_space");
  }

  const Entry& match = require(es, "match", at);
  match_at = where(match);
  std::vector<Entry> ms = entries(match.value, where(match), {{"method", "path", "format_suffix"}});
  r.methods = methods(require(ms, "method", where(match)));
  const Entry& path = require(ms, "path", where(match));
  const Entry* format_suffix = find(ms, "format_suffix");
  Result<PathPattern> pattern =
      PathPattern::parse(scalar(path, "a path such as /orders"), format_suffix && boolean(*format_suffix));
  if (!pattern)
    fail(format_suffix && pattern.status().message().starts_with("format_suffix") ? *format_suffix : path,
         pattern.status().message());
  r.path = std::move(*pattern);

  const Entry* key = find(es, "key");
  if (key) r.key = key_rule(*key);
  if (const Entry* e = find(es, "required")) r.required = boolean(*e);
  const Entry* mode = find(es, "mode");
  if (mode && choice(*mode, {"replay", "lock", "jsonrpc"}) == 2) {
    // A replay route that reads JSON-RPC calls (docs/configuration.md, "JSON-RPC routes").
    r.jsonrpc = JsonRpcRule{};
  } else if (mode) {
    r.mode = static_cast<Mode>(choice(*mode, {"replay", "lock"}));
  }
  if (const Entry* e = find(es, "jsonrpc_methods")) {
    if (!r.jsonrpc) fail(*e, "jsonrpc_methods needs mode: jsonrpc");
    std::vector<Entry> list = e->value.IsSequence() ? items(*e) : std::vector<Entry>{*e};
    if (list.empty()) fail(*e, "an empty list of JSON-RPC methods protects nothing: remove mode: jsonrpc");
    r.jsonrpc->methods.clear();
    for (const Entry& m_at : list) {
      std::string m = scalar(m_at, "a JSON-RPC method such as tools/call, or a list of them");
      if (m.empty()) fail(m_at, "a JSON-RPC method name is not empty");
      r.jsonrpc->methods.push_back(std::move(m));
    }
  }
  if (r.jsonrpc) {
    if (r.key.kind == KeyRule::Kind::token)
      fail(*key, "a JSON-RPC route takes its key from a header or the call");
    if (const Entry* f = find(es, "fingerprint"))
      fail(*f,
           "a JSON-RPC route fingerprints the call (method and params, without id and params._meta): remove "
           "fingerprint");
  }
  PolicyOrigin origin = defaults;
  if (const Entry* e = find(es, "upstream")) {
    r.upstream = scalar(*e, "the name of one of upstreams");
    const NamedUpstream* u = c.named_upstream(r.upstream);
    if (!u) {
      std::string known;
      for (const NamedUpstream& n : c.upstreams) known += (known.empty() ? "" : ", ") + n.name;
      fail(*e, "unknown upstream '" + r.upstream + "' (" +
                   (known.empty() ? std::string("no upstreams are defined") : "known: " + known) + ")");
    }
    if (u->timeout) r.policy.upstream_timeout = *u->timeout;  // the route's own wins, read next
  }
  read_policy(es, r.policy, origin);

  if (r.key.kind == KeyRule::Kind::token) {
    if (mode && r.mode == Mode::lock) fail(*mode, "lock cannot be used with key: token");
    if (const Entry* s = find(es, "subject")) {
      fail(*s, "a token route takes its subject from tokens.subject; remove it here");
    }
    r.policy.subject = c.tokens.subject;
  }
  if (r.key.kind == KeyRule::Kind::templated) {
    if (!r.key.key_template.has_placeholders() && r.mode == Mode::replay) {
      fail(*key,
           "a key without {placeholders} is the same for every request (write header:NAME for a key "
           "sent in a header)");
    }
    const auto& parts = r.key.key_template.parts();
    if (r.key.key_template.has_placeholders() &&
        std::ranges::none_of(parts, [](const KeyTemplate::Part& p) { return !p.literal && !p.optional; })) {
      fail(*key,
           "every placeholder is optional, so requests without those fields would all have one key: make "
           "one of them required (no '?')");
    }
    check_templates(r.key.key_template, r, where(*key), false);
  }
  check_fingerprint(r, origin);
  if (r.policy.principal && r.policy.principal->kind == Principal::Kind::subject &&
      r.policy.subject.kind == Subject::Kind::none) {
    const Entry* p = find(es, "principal");
    const std::string why =
        "principal: subject needs a subject (header:NAME or header-hash:NAME) on the route";
    if (p != nullptr) fail(*p, why);
    fail(at, why + " (principal: subject comes from defaults)");
  }
  return r;
}

void ConfigReader::advise_on_routes(Config& c, const std::vector<Where>& match_at) const {
  auto advise = [&](const Where& w, std::string reason) {
    c.advice.emplace_back(source(), w.line, w.path, std::move(reason));
  };
  for (std::size_t j = 0; j < c.routes.size() && j < match_at.size(); ++j) {
    const Route& later = c.routes[j];
    // Shadowed: the first earlier route that takes each of its methods and every path it
    // matches wins every request it would get (the first match wins).
    for (std::size_t i = 0; i < j; ++i) {
      const Route& earlier = c.routes[i];
      const bool methods = std::all_of(later.methods.begin(), later.methods.end(), [&](const std::string& m) {
        return std::find(earlier.methods.begin(), earlier.methods.end(), m) != earlier.methods.end();
      });
      if (!methods || !earlier.path.covers(later.path)) continue;
      advise(match_at[j], "route '" + later.name + "' never matches: routes[" + std::to_string(i) + "] ('" +
                              earlier.name + "', path \"" + earlier.path.text() +
                              "\") comes first and takes every request it would (the first match wins); move "
                              "it before, or remove it");
      break;
    }
    // Safe methods: idempotent by HTTP's own rules, and a read is what a record would keep.
    for (const std::string& m : later.methods) {
      if (m != "GET" && m != "HEAD" && m != "OPTIONS" && m != "TRACE") continue;
      advise(
          {match_at[j].line, match_at[j].path + ".method"},
          m + " is a safe method, idempotent by HTTP semantics already (RFC 9110, 9.2.1): protecting it "
              "stores every read and replays it, stale, for the retention; protect the methods that change "
              "state (POST, PATCH)");
    }
  }
}

namespace {

// Why an upstream's CA file cannot be used, or "": it is read when the config is (`idem
// check`, the start, a reload), as the upstream's connections will read it, so a missing or
// mangled file is an error at its key instead of a 502 for every request to that upstream
// (docs/configuration.md, "TLS to upstreams").
std::string ca_file_problem(const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0)
    return "cannot load the CA certificates " + path + ": " + std::strerror(errno);
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), &X509_STORE_free);
  const bool loaded = store && X509_STORE_load_file(store.get(), path.c_str()) == 1;
  ERR_clear_error();
  return loaded ? "" : "cannot load the CA certificates " + path + ": it holds no PEM certificate";
}

}  // namespace

UpstreamTls ConfigReader::read_tls(const Entry& e, const std::optional<UpstreamUrl>& url, Config& c) const {
  UpstreamTls t;
  std::vector<Entry> es = entries(e.value, where(e), {kTlsKeys});
  if (url && !url->tls)
    fail(e, "TLS settings for an http:// upstream: write its URL as https://, or remove them");
  if (const Entry* f = find(es, "ca_file")) {
    t.ca_file = scalar(*f, "a PEM file of CA certificates");
    if (t.ca_file.empty()) fail(*f, "must name a file");
    if (const std::string why = ca_file_problem(t.ca_file); !why.empty()) fail(*f, why);
  }
  if (const Entry* f = find(es, "server_name")) {
    t.server_name = scalar(*f, "a host name such as orders.internal");
    if (t.server_name.find_first_of(" /:@") != std::string::npos)
      fail(*f, "a host name, without port or path");
  }
  if (const Entry* f = find(es, "insecure_skip_verify")) {
    t.insecure_skip_verify = boolean(*f);
    if (t.insecure_skip_verify)
      c.advice.emplace_back(
          source(), where(*f).line, f->path,
          "the upstream's certificate is not verified: anyone on the path can read and change "
          "the requests and answers; give its CA with ca_file instead");
  }
  return t;
}

void ConfigReader::read_upstreams(const Entry& map, Config& c) const {
  for (const Entry& e : entries(map.value, where(map), {})) {
    NamedUpstream u;
    u.name = e.key.Scalar();
    u.line = line_of(e.key);
    if (!is_route_name(u.name)) fail(e, "an upstream's name is letters, digits, '-', '_' and '.'");
    if (!e.value.IsMap()) fail(e, "expected an upstream: a mapping with url (and timeout, idle_timeout)");
    std::vector<Entry> es = entries(e.value, where(e), {kUpstreamKeys});
    const Entry& url = require(es, "url", where(e));
    // A value with an unset variable (idem check) is not validated: warned of instead.
    if (auto text = scalar_if_set(url, "a URL such as http://127.0.0.1:9000")) {
      Result<UpstreamUrl> parsed = parse_upstream_url(*text);
      if (!parsed) fail(url, parsed.status().message());
      u.url = *parsed;
    }
    if (const Entry* t = find(es, "timeout")) u.timeout = duration(*t, kPositive, "must be greater than 0");
    u.idle = c.upstream_idle;
    if (const Entry* t = find(es, "idle_timeout"))
      u.idle = duration(*t, Duration::zero(), "must not be negative");
    // Unset variables in url (idem check) leave it unknown: its scheme is not checked.
    if (const Entry* t = find(es, "tls"))
      u.tls = read_tls(*t, u.url.host.empty() ? std::nullopt : std::optional(u.url), c);
    c.upstreams.push_back(std::move(u));
  }
}

Config ConfigReader::read(const YAML::Node& root) {
  Config c;
  if (!root.IsNull() && !root.IsMap()) {
    fail({line_of(root), ""}, "expected a mapping of settings (listen, upstream, store, routes, ...)");
  }
  std::vector<Entry> es = entries(root, {1, ""}, {kTopKeys});

  const Entry* listen = find(es, "listen");
  if (listen) {
    Result<ListenAddress> a = parse_listen_address(scalar(*listen, "HOST:PORT or :PORT"));
    if (!a) fail(*listen, a.status().message());
    c.listen = *a;
  }
  // A value with an unset variable (idem check) is not validated: warned of instead.
  if (const Entry* e = find(es, "upstream")) {
    if (auto text = scalar_if_set(*e, "a URL such as http://127.0.0.1:9000")) {
      Result<UpstreamUrl> u = parse_upstream_url(*text);
      if (!u) fail(*e, u.status().message());
      c.upstream = *u;
    }
  }
  if (const Entry* e = find(es, "upstream_idle_timeout"))
    c.upstream_idle = duration(*e, Duration::zero(), "must not be negative");
  if (const Entry* e = find(es, "upstream_tls")) c.upstream_tls = read_tls(*e, c.upstream, c);
  if (const Entry* e = find(es, "upstreams")) read_upstreams(*e, c);
  if (const Entry* e = find(es, "store")) {
    // As read, even with a variable unset, but then not validated.
    const std::optional<std::string> uri = scalar_if_set(*e, "a store URI such as sqlite:./idem.db");
    c.store = uri ? *uri : expanded_leniently(*e);
    if (Status s = check_store_uri(c.store); uri && !s) fail(*e, s.message());
  }
  if (const Entry* e = find(es, "trusted_proxies")) read_trusted_proxies(*e, c);
  if (const Entry* e = find(es, "tls")) read_tls(*e, c);
  const Entry* admin = find(es, "admin");
  if (admin) read_admin(*admin, c);
  if (auto why = config_checks::listeners_collide(c)) {
    fail(admin ? where(*admin) : where(*listen), *why);
  }

  if (const Entry* e = find(es, "jwt")) read_jwt(*e, c);
  PolicyOrigin defaults_origin;
  if (const Entry* e = find(es, "defaults")) {
    read_policy(entries(e->value, where(*e), {kPolicyKeys}), c.defaults, defaults_origin);
  }
  defaults_origin.from_defaults = true;
  c.tokens.subject = c.defaults.subject;
  if (const Entry* e = find(es, "tokens")) read_tokens(*e, c);
  if (const Entry* e = find(es, "replay_cache")) read_replay_cache(*e, c);

  const Entry* routes = find(es, "routes");
  std::vector<Where> match_at;
  if (routes && !routes->value.IsNull()) {
    for (const Entry& item : items(*routes)) {
      Where name_at;
      Route r = read_route(item, c, defaults_origin, name_at, match_at.emplace_back());
      for (std::size_t i = 0; i < c.routes.size(); ++i) {
        if (c.routes[i].name == r.name) {
          fail(name_at, "route name '" + r.name + "' is already used by routes[" + std::to_string(i) + "]");
        }
      }
      c.routes.push_back(std::move(r));
    }
  }
  c.routes_written = !c.routes.empty();
  advise_on_routes(c, match_at);
  for (const NamedUpstream& u : c.upstreams) {
    const bool used = std::ranges::any_of(c.routes, [&](const Route& r) { return r.upstream == u.name; });
    if (!used)
      c.advice.emplace_back(source(), u.line, "upstreams." + u.name,
                            "no route names this upstream (upstream: " + u.name +
                                "), so no request goes to it: name it on a route, or remove it");
  }
  if (c.routes.empty()) {  // no routes (or an empty list): the default route
    c.routes.push_back(default_route(c.defaults));
    check_fingerprint(c.routes.back(), defaults_origin);
  }

  // One client's share of the body budget holds the largest body a route takes: unless
  // given, 32MiB or that body, whichever is more (within buffered_bodies: a body larger than
  // that is refused overloaded, as it always was, unless `limits` says otherwise).
  const Route* largest = &c.routes.front();
  for (const Route& r : c.routes)
    if (r.policy.max_body > largest->policy.max_body) largest = &r;
  const std::uint64_t largest_body = largest->policy.max_body;
  std::vector<Entry> given;
  const Entry* limits = find(es, "limits");
  if (limits) given = read_limits(*limits, c.limits);
  if (!find(given, "buffered_bodies_per_client"))
    c.limits.buffered_bodies_per_client =
        std::min(c.limits.buffered_bodies, std::max(kDefaultBodiesPerClient, largest_body));
  if (limits)
    check_limits(
        c.limits, *limits, given, largest_body,
        "the largest body route '" + largest->name + "' takes (max_body " + size_text(largest_body) + ")",
        ", or lower max_body");
  return c;
}

}  // namespace

Config load_config_text(std::string_view yaml, std::string_view name, const ConfigEnvironment& env) {
  ConfigReader reader{std::string(name), env};
  YAML::Node root = reader.parse_document(yaml);
  try {
    Config c = reader.read(root);
    c.source = std::string(name);
    return c;
  } catch (const YAML::Exception& e) {
    // Reading a parsed document should not throw; if yaml-cpp does, it is still a config error.
    reader.fail({e.mark.is_null() ? 0 : e.mark.line + 1, ""}, "invalid YAML: " + e.msg);
  }
}

}  // namespace idem::gateway
