#include "stores/redis/redis_uri.h"

#include <charconv>

#include "idem/store_uri.h"
#include "util/percent.h"
#include "util/uri_query.h"

namespace idem::redis {
namespace {

// Names the URI with its password written ***; `what` may quote a part of it.
Status bad(std::string_view uri, const std::string& what) {
  return invalid_argument(
      "redis: " + redact_secrets(what, uri) + " in store URI '" + redact_uri(uri) +
      "' (expected redis://[user:pass@]host:port[/db][?prefix=P], "
      "redis-cluster://host:port[,host:port...][?prefix=P] or "
      "redis+sentinel://host:port[,host:port...]/MASTER[/db][?prefix=P], or rediss://, "
      "rediss-cluster://, rediss+sentinel:// for TLS; more parameters: allow_eviction=true, "
      "wait=N, sentinel_user, sentinel_password, tls_ca, tls_cert, tls_key, tls_server_name)");
}

Result<Endpoint> parse_endpoint(std::string_view uri, std::string_view text, std::uint16_t default_port) {
  Endpoint e;
  e.port = default_port;
  std::string_view port;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return bad(uri, "unclosed '[' in host '" + std::string(text) + "'");
    e.host = std::string(text.substr(1, close - 1));
    const auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return bad(uri, "unexpected text after host '" + std::string(text) + "'");
      port = rest.substr(1);
    }
  } else {
    const auto colon = text.rfind(':');
    e.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) port = text.substr(colon + 1);
  }
  if (e.host.empty()) return bad(uri, "missing host in '" + std::string(text) + "'");
  if (text.find(':') != std::string_view::npos && !text.starts_with('[') && port.empty()) {
    return bad(uri, "empty port in '" + std::string(text) + "'");
  }
  if (!port.empty()) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return bad(uri, "port '" + std::string(port) + "' is not a number from 1 to 65535");
    }
    e.port = static_cast<std::uint16_t>(value);
  }
  return e;
}

constexpr std::string_view kParameters =
    "prefix=..., allow_eviction=true|false, wait=N, sentinel_user=..., sentinel_password=... "
    "(redis+sentinel://), tls_ca=FILE, tls_cert=FILE, tls_key=FILE, tls_server_name=NAME (rediss schemes)";

// A parameter's value, %-decoded.
Result<std::string> decoded(std::string_view uri, std::string_view name, std::string_view value) {
  std::optional<std::string> out = util::percent_decode(value, util::BadPercent::reject);
  if (!out) return bad(uri, "bad %-escape in " + std::string(name));
  return std::move(*out);
}

Status parse_query(std::string_view uri, std::string_view query, Config& c) {
  while (!query.empty()) {
    const util::QueryParam param = util::next_query_param(query);
    const std::string_view name = param.name, value = param.value;
    if (!param.has_value)
      return bad(uri, "unknown parameter '" + std::string(param.text) + "' (the parameters are " +
                          std::string(kParameters) + ")");
    if (name == "allow_eviction") {
      if (value != "true" && value != "false") {
        return bad(uri, "allow_eviction='" + std::string(value) + "' is not true or false");
      }
      c.allow_eviction = value == "true";
      continue;
    }
    if (name == "wait") {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), c.wait_replicas);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size() || c.wait_replicas < 0 ||
          c.wait_replicas > kMaxWaitReplicas) {
        return bad(uri, "wait='" + std::string(value) + "' is not a number of replicas from 0 to " +
                            std::to_string(kMaxWaitReplicas));
      }
      continue;
    }
    std::string* text = name == "prefix"              ? &c.prefix
                        : name == "sentinel_user"     ? &c.sentinel_user
                        : name == "sentinel_password" ? &c.sentinel_password
                        : name == "tls_ca"            ? &c.tls.ca_file
                        : name == "tls_cert"          ? &c.tls.cert_file
                        : name == "tls_key"           ? &c.tls.key_file
                        : name == "tls_server_name"   ? &c.tls.server_name
                                                      : nullptr;
    if (!text) {
      return bad(uri, "unknown parameter '" + std::string(param.text) + "' (the parameters are " +
                          std::string(kParameters) + ")");
    }
    auto v = decoded(uri, name, value);
    if (!v) return v.status();
    *text = std::move(*v);
    if (name == "prefix" && c.prefix.find_first_of("{}") != std::string::npos) {
      return bad(uri, "the prefix '" + c.prefix + "' contains '{' or '}' (they would break hash tags)");
    }
    if (name != "prefix" && text->empty()) return bad(uri, "an empty " + std::string(name));
  }
  if (!c.sentinel && (!c.sentinel_user.empty() || !c.sentinel_password.empty())) {
    return bad(uri, "sentinel_user and sentinel_password are for redis+sentinel:// only");
  }
  const Tls& t = c.tls;
  if (!t.on &&
      (!t.ca_file.empty() || !t.cert_file.empty() || !t.key_file.empty() || !t.server_name.empty())) {
    return bad(
        uri,
        "tls_* parameters need TLS: write the scheme rediss://, rediss-cluster:// or rediss+sentinel://");
  }
  if (t.cert_file.empty() != t.key_file.empty()) return bad(uri, "tls_cert and tls_key go together");
  return Status::ok();
}

}  // namespace

std::string to_string(const Endpoint& e) {
  const bool v6 = e.host.find(':') != std::string::npos;
  return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
}

Result<Config> parse_uri(std::string_view uri) {
  Config c;
  std::string_view rest;
  constexpr std::pair<std::string_view, int> kSchemes[] = {
      {"redis://", 0},      {"redis-cluster://", 1},      {"redis+sentinel://", 2},
      {"rediss://", 0 | 4}, {"rediss-cluster://", 1 | 4}, {"rediss+sentinel://", 2 | 4}};
  int kind = -1;
  for (const auto& [scheme, k] : kSchemes) {
    if (uri.starts_with(scheme)) {
      rest = uri.substr(scheme.size());
      kind = k;
    }
  }
  if (kind < 0) {
    return bad(uri,
               "the scheme is not redis://, redis-cluster://, redis+sentinel://, rediss://, "
               "rediss-cluster:// or rediss+sentinel://");
  }
  c.cluster = (kind & 3) == 1;
  c.sentinel = (kind & 3) == 2;
  c.tls.on = (kind & 4) != 0;

  if (const auto q = rest.find('?'); q != std::string_view::npos) {
    if (auto s = parse_query(uri, rest.substr(q + 1), c); !s) return s;
    rest = rest.substr(0, q);
  }
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    // "user:password" or "password", with %XX escapes.
    const auto colon = userinfo.find(':');
    const bool named = colon != std::string_view::npos;
    std::optional<std::string> user =
        named ? util::percent_decode(userinfo.substr(0, colon), util::BadPercent::reject) : std::string();
    std::optional<std::string> password =
        util::percent_decode(named ? userinfo.substr(colon + 1) : userinfo, util::BadPercent::reject);
    if (!user || !password) return bad(uri, "bad %-escape in the user or password");
    c.user = std::move(*user);
    c.password = std::move(*password);
    if (c.password.empty()) return bad(uri, "empty password before '@'");
  }
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (c.sentinel) {
      // MASTER[/db]
      const auto next = db.find('/');
      auto name = util::percent_decode(db.substr(0, next), util::BadPercent::reject);
      if (!name) return bad(uri, "bad %-escape in the master name");
      c.master_name = std::move(*name);
      db = next == std::string_view::npos ? std::string_view() : db.substr(next + 1);
    }
    if (!db.empty()) {
      if (c.cluster) return bad(uri, "a database number ('/" + std::string(db) + "') on a cluster");
      const auto [end, ec] = std::from_chars(db.data(), db.data() + db.size(), c.db);
      if (ec != std::errc() || end != db.data() + db.size() || c.db < 0) {
        return bad(uri, "database '" + std::string(db) + "' is not a number");
      }
    }
  }
  if (c.sentinel && c.master_name.empty()) {
    return bad(uri, "no master name: redis+sentinel:// names the master after the sentinels (/mymaster)");
  }
  const std::uint16_t default_port = c.sentinel ? 26379 : 6379;
  while (true) {
    const auto comma = rest.find(',');
    auto e = parse_endpoint(uri, rest.substr(0, comma), default_port);
    if (!e) return e.status();
    c.nodes.push_back(std::move(*e));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (!c.cluster && !c.sentinel && c.nodes.size() > 1) {
    return bad(uri, "several hosts (use redis-cluster:// for a cluster, redis+sentinel:// for sentinels)");
  }
  return c;
}

}  // namespace idem::redis
