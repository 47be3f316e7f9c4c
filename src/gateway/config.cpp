#include "gateway/config.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gateway/config_checks.h"

namespace idem::gateway {
namespace {

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
    : std::runtime_error(format_error(source, line, key, reason)),
      source_(std::move(source)),
      line_(line),
      key_(std::move(key)),
      reason_(std::move(reason)) {}

Config default_config() {
  Config c;
  c.routes.push_back(default_route(c.defaults));
  return c;
}

Config load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, 0, "", std::string("cannot open the file: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path, 0, "", "cannot read the file");
  return load_config_text(text.str(), path);
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

void require_upstream(const Config& config) {
  if (!config.upstream) {
    throw ConfigError("", 0, "upstream",
                      "not set: name the protected service in the config or with --upstream URL");
  }
}

}  // namespace idem::gateway
