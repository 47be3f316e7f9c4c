#include "gateway/model/config/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gateway/model/config/config_checks.h"

namespace idem::gateway {
namespace {

// Control characters of the config text reach messages through keys and values quoted in
// them ("unknown key", yaml-cpp's "unknown escape character"). Written as they are, a NUL
// would cut what() short and an escape sequence would act on the terminal: \xHH instead.
std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7F) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    }
  }
  return out;
}

std::string format_error(const std::string& source, int line, const std::string& key,
                         const std::string& reason) {
  std::string out = source;
  if (line > 0) out += ":" + std::to_string(line);
  for (const std::string* part : {&key, &reason}) {
    if (part->empty()) continue;
    if (!out.empty()) out += ": ";
    out += *part;
  }
  return out;
}

template <class T>
T flag_value(const Result<T>& r, const char* flag) {
  if (!r) throw ConfigError("", 0, flag, r.status().message());
  return r.value();
}

}  // namespace

ConfigError::ConfigError(std::string source, int line, std::string key, std::string reason)
    : std::runtime_error(format_error(printable(source), line, printable(key), printable(reason))),
      source_(printable(source)),
      line_(line),
      key_(printable(key)),
      reason_(printable(reason)) {}

bool Config::issues_tokens() const {
  return std::any_of(routes.begin(), routes.end(),
                     [](const Route& r) { return r.key.kind == KeyRule::Kind::token; });
}

Config default_config() {
  Config c;
  c.routes.push_back(default_route(c.defaults));
  return c;
}

std::optional<std::string> ConfigEnvironment::get(const std::string& name) const {
  if (lookup) return lookup(name);
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Config load_config_file(const std::string& path, const ConfigEnvironment& env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, 0, "", std::string("cannot open the file: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path, 0, "", "cannot read the file");
  return load_config_text(text.str(), path, env);
}

void apply_overrides(Config& config, const CliOverrides& flags) {
  if (flags.listen) config.listen = flag_value(parse_listen_address(*flags.listen), "--listen");
  if (flags.upstream) config.upstream = flag_value(parse_upstream_url(*flags.upstream), "--upstream");
  if (flags.store) {
    if (Status s = check_store_uri(*flags.store); !s) throw ConfigError("", 0, "--store", s.message());
    config.store = *flags.store;
  }
  if (flags.admin) {
    config.admin.listen = flag_value(parse_listen_address(*flags.admin), "--admin");
    if (auto why = config_checks::admin_exposed(config)) throw ConfigError("", 0, "--admin", *why);
  }
  if (auto why = config_checks::listeners_collide(config)) {
    throw ConfigError("", 0, flags.admin ? "--admin" : "--listen", *why);
  }
}

void require_store_holds_results(const Config& config, std::uint64_t store_max_result,
                                 std::string_view store_name) {
  for (std::size_t i = 0; i < config.routes.size(); ++i) {
    const Route& r = config.routes[i];
    const Policy& p = r.policy;
    if (store_max_result >= kStoredHeadersMargin && p.max_result <= store_max_result - kStoredHeadersMargin) {
      continue;
    }
    const std::string key =
        p.max_result_key.empty() ? "routes[" + std::to_string(i) + "].max_result" : p.max_result_key;
    const std::string holds = store_max_result > kStoredHeadersMargin
                                  ? std::to_string(store_max_result - kStoredHeadersMargin)
                                  : "0";
    throw ConfigError(p.max_result_line > 0 ? config.source : "", p.max_result_line, key,
                      "route '" + r.name + "' stores responses of up to " + std::to_string(p.max_result) +
                          " bytes, and the " + std::string(store_name) + " store holds results of " +
                          std::to_string(store_max_result) + " bytes: a response body of at most " + holds +
                          " bytes with its headers (docs/stores.md, \"Sizes\"); lower max_result");
  }
}

const NamedUpstream* Config::named_upstream(std::string_view name) const {
  for (const NamedUpstream& u : upstreams)
    if (u.name == name) return &u;
  return nullptr;
}

void require_upstream(const Config& config) {
  if (config.upstream) return;
  // Without a default every request of a route goes to its named upstream, and a request on no
  // route is answered 502 (docs/gateway.md, "Several services behind one gateway").
  if (!config.upstreams.empty() && config.routes_written) {
    for (std::size_t i = 0; i < config.routes.size(); ++i)
      if (config.routes[i].upstream.empty())
        throw ConfigError(config.source, 0, "routes[" + std::to_string(i) + "].upstream",
                          "not set, and there is no default upstream: name one of upstreams, or set upstream "
                          "(or --upstream URL)");
    return;
  }
  // Without a file, a forgotten --upstream is far likelier than a wish for the control API
  // alone, which a config file says by leaving out both upstream and routes.
  if (config.source.empty())
    throw ConfigError("", 0, "upstream",
                      "not set: name the protected service with --upstream URL (or, for the control API "
                      "alone, give a --config without upstream and routes)");
  if (config.routes_written)
    throw ConfigError(config.source, 0, "upstream",
                      "not set, and routes need one: name the protected service in the config or with "
                      "--upstream URL (a config without routes and upstream serves the control API alone)");
}

}  // namespace idem::gateway
