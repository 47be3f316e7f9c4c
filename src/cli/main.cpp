// The `idem` command (docs/configuration.md, "Command line"; docs/operations.md): serve, check, record
// get|delete|list, sweep, schema, version. The commands that act on a store take it from
// --store, --config or $IDEM_STORE (store_uri_of). Exit codes: 0 ok, 2 usage or config error, 1 runtime
// failure. Diagnostics go to standard error; `idem serve` writes one JSON line per protected request to
// standard output.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "cli/service_notify.h"
#include "gateway/admin/bulk_resolve.h"
#include "gateway/admin/record_json.h"
#include "gateway/admin/record_list.h"
#include "gateway/app/runtime.h"
#include "gateway/http/server.h"
#include "gateway/model/config/config.h"
#include "gateway/model/record_drift.h"
#include "gateway/model/route.h"
#include "idem/open.h"
#include "idem/store_uri.h"
#include "idem/version.h"
#include "stores/deferred/deferred_store.h"
#include "stores/schema_ddl.h"
#include "util/asio_tokens.h"

namespace asio = boost::asio;
using namespace idem;
using namespace idem::gateway;

namespace {

constexpr int kOk = 0;
constexpr int kRuntime = 1;
constexpr int kUsage = 2;

// A store error on standard error. Store messages name the server, not its password;
// `uri` is redacted from them all the same, as it is everywhere it is printed.
void report(const Status& s, const std::string& uri) {
  std::cerr << "idem: " << redact_secrets(s.to_string(), uri) << "\n";
}

// A malformed URI, or a store that refuses its configuration (wrong credentials, a Redis that
// may evict keys: docs/stores.md) is a configuration error (exit 2), not a runtime failure.
bool is_config_error(const Status& s) {
  return s.code() == StatusCode::invalid_argument || s.code() == StatusCode::failed_precondition;
}

// nullptr when the store cannot be opened (said on standard error); `exit_code` then tells
// a configuration error (2: the store refused what it was asked to be, failed_precondition,
// e.g. a Redis that may evict keys, or wrong credentials) from a runtime failure (1: e.g.
// unreachable).
std::unique_ptr<Store> open_or_die(const std::string& uri) {
  auto store = open_store(uri);
  if (!store) {
    std::cerr << "idem: cannot open store " << redact_uri(uri) << ": "
              << redact_secrets(store.status().to_string(), uri) << "\n";
    return nullptr;
  }
  return std::move(*store);
}

// What `record get|delete` says when there is no record: where it looked, and, for a key
// given without its key space, the form records are stored in (docs/gateway.md, "Key
// spaces"), since that is the usual reason.
std::string not_found(const std::string& scope, const std::string& key_space, const std::string& key) {
  const std::string in_scope = scope.empty() ? "" : " in scope \"" + scope + "\"";
  if (!key_space.empty())
    return "not found: no record for key \"" + key + "\" in key space " + key_space + in_scope +
           " (stored key \"" + stored_key(key_space, key) + "\")";
  const auto colon = key.find(':');
  if (colon != std::string::npos && is_key_space(key.substr(0, colon)))
    return "not found: no record with the stored key \"" + key + "\"" + in_scope + " (key space " +
           key.substr(0, colon) + ")";
  return "not found: no record with the stored key \"" + key + "\"" + in_scope +
         ", which names no key space; records are stored as <key_space>:<key>, the key space being the "
         "route's key_space or name: try ROUTE:" +
         key + " or --key-space ROUTE " + key;
}

// `record get|delete`: true when the store answered and there was a record; otherwise
// says why not on standard error.
template <class T>
bool found(const Result<T>& r, const std::string& uri, const std::string& what_missing) {
  if (!r) {
    report(r.status(), uri);
    return false;
  }
  if (!*r) {
    std::cerr << "idem: " << what_missing << "\n";
    return false;
  }
  return true;
}

// The store URI a command acts on (docs/configuration.md, "Command line"): --store, else
// the `store` of --config FILE (its ${NAME} read from the environment), else the
// environment variable IDEM_STORE. So the URI, and the password in it, need not be on the
// command line, where `ps` shows it to every local user. nullopt when there is none, or
// the config cannot give one (said on standard error: exit 2).
std::optional<std::string> store_uri_of(const std::string& flag, const std::string& config_file) {
  if (!flag.empty()) return flag;
  if (!config_file.empty()) {
    // Only the store matters here: an unset variable elsewhere (admin.token_env, say) is
    // no reason to refuse a sweep; one in the store is named, before what it broke.
    std::vector<ConfigError> unset;
    auto store_unset = [&] {
      for (const ConfigError& w : unset)
        if (w.key() == "store") {
          std::cerr << "idem: " << w.what() << "\n";
          return true;
        }
      return false;
    };
    try {
      Config c = load_config_file(config_file, {.strict = false, .warnings = &unset});
      if (store_unset()) return std::nullopt;
      return c.store;
    } catch (const ConfigError& e) {
      if (!store_unset()) std::cerr << "idem: " << e.what() << "\n";
      return std::nullopt;
    }
  }
  if (const char* env = std::getenv("IDEM_STORE"); env && *env) return std::string(env);
  std::cerr << "idem: no store: give --store URI, --config FILE (its store) or the environment variable "
               "IDEM_STORE\n";
  return std::nullopt;
}

// `record list`: the same JSON document as GET /v1/records.
int list_records(const std::string& uri, std::string_view key_space, std::string_view state, bool uncertain,
                 std::optional<std::size_t> limit, std::string cursor) {
  Result<ListRequest> request = make_list_request(key_space, state, uncertain, limit, std::move(cursor));
  if (!request) {
    std::cerr << "idem: " << request.status().message() << "\n";
    return kUsage;
  }
  auto store = open_or_die(uri);
  if (!store) return kRuntime;
  ListCollector list(std::move(*request));
  while (std::optional<ListArgs> args = list.next()) {
    Result<ListPage> page = store->list(std::move(*args));
    if (!page) {
      report(page.status(), uri);
      return page.status().code() == StatusCode::invalid_argument ? kUsage : kRuntime;
    }
    list.add(std::move(*page));
  }
  std::cout << list.json() << "\n";
  return kOk;
}

// The audit line of the command line (docs/admin.md, "Tokens and roles"): who is the
// user running it, where the host.
void cli_audit(std::string_view action, const RecordId& id, const Record* before, std::string_view decision) {
  const char* user = std::getenv("USER");
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const std::string who = std::string("(command line") + (user && *user ? std::string(" ") + user : "") + ")";
  std::cerr << audit_line(action, who, host, id.scope, id.key, before, decision) << "\n";
}

// `record resolve`: the same selection and answer as POST /v1/records/resolve.
int resolve_records(const std::string& uri, ResolvePlan plan) {
  auto store = open_or_die(uri);
  if (!store) return kRuntime;
  BulkResolve bulk(std::move(plan), std::chrono::system_clock::now());
  while (std::optional<ListArgs> args = bulk.next()) {
    Result<ListPage> page = store->list(std::move(*args));
    if (!page) {
      report(page.status(), uri);
      return kRuntime;
    }
    bulk.add(std::move(*page));
  }
  for (const Record& r : bulk.selected()) {
    if (bulk.plan().dry_run) {
      bulk.done(r, "matched");
      continue;
    }
    const RecordId id{r.scope, r.key};
    Result<std::optional<Record>> now = store->get(RecordId(id));
    std::string_view decision;
    if (!now) {
      decision = "store_failed";
    } else if (!BulkResolve::unchanged(r, *now)) {
      decision = "changed";
    } else if (bulk.plan().decision == ResolvePlan::Decision::release) {
      Result<bool> removed = store->remove(RecordId(id));
      decision = !removed ? "store_failed" : (*removed ? "released" : "changed");
    } else {
      Result<CommitOutcome> c = store->commit(bulk.completion(r, std::chrono::system_clock::now()));
      decision = !c ? "store_failed" : (*c == CommitOutcome::committed ? "completed" : "changed");
    }
    cli_audit("resolve", id, &r, decision);
    bulk.done(r, decision);
  }
  std::cout << bulk.json() << "\n";
  return kOk;
}

// Raises the open-files limit to what the system allows, and returns how many client
// connections it leaves room for: each may hold an upstream connection too, plus the
// store's files.
std::size_t max_client_connections() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return SIZE_MAX;
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
    ::getrlimit(RLIMIT_NOFILE, &files);
  }
  return files.rlim_cur > 128 ? (files.rlim_cur - 128) / 2 : 16;
}

int serve(const std::string& config_file, const CliOverrides& flags) {
  Config config;
  try {
    config = config_file.empty() ? default_config() : load_config_file(config_file);
    apply_overrides(config, flags);
    require_upstream(config);
    require_admin_token_off_loopback(config);
  } catch (const ConfigError& e) {
    std::cerr << "idem: " << e.what() << "\n";
    return kUsage;
  }
  for (const ConfigError& a : config.advice) std::cerr << "idem: warning: " << a.what() << "\n";
  // A store that cannot be reached now does not stop the gateway (docs/admin.md, "When
  // the store is down"): it serves, protected requests follow on_store_error and /readyz
  // with them (docs/admin.md, "Readiness"), while the store is opened again in the background. A store that
  // refuses what it was given (a malformed URI, a Redis that may evict keys) does.
  std::unique_ptr<Store> store;
  if (auto opened = open_store(config.store)) {
    store = std::move(*opened);
    // A store reached only later is not checked: responses it cannot hold are then
    // answered and not stored (docs/configuration.md, max_result).
    try {
      require_store_holds_results(config, store->max_result_bytes(), store->traits().name);
    } catch (const ConfigError& e) {
      std::cerr << "idem: " << e.what() << "\n";
      return kUsage;
    }
  } else if (const auto code = opened.status().code();
             code == StatusCode::unavailable || code == StatusCode::deadline_exceeded) {
    const std::string uri = config.store;
    std::cerr << "idem: store " << redact_uri(uri) << " is not reachable ("
              << redact_secrets(opened.status().to_string(), uri)
              << "); serving with on_store_error until it answers" << std::endl;
    store = std::make_unique<DeferredStore>(uri, StoreOptions{}, [uri](const Status& s, bool ok) {
      if (ok)
        std::cerr << "idem: store " << redact_uri(uri) << " reached" << std::endl;
      else
        std::cerr << "idem: store " << redact_uri(uri)
                  << " still not reachable: " << redact_secrets(s.to_string(), uri) << std::endl;
    });
  } else {
    std::cerr << "idem: cannot open store " << redact_uri(config.store) << ": "
              << redact_secrets(opened.status().to_string(), config.store) << "\n";
    return is_config_error(opened.status()) ? kUsage : kRuntime;
  }

  std::unique_ptr<Runtime> runtime;
  try {
    RuntimeOptions options;
    options.max_client_connections = max_client_connections();
    options.config_file = config_file;
    options.flags = flags;
    // The install's secret for the request log's key_hash (docs/observability.md): the
    // Debian package writes a random one to /etc/default/idem. Without it, one of this
    // process's own.
    if (const char* secret = std::getenv("IDEM_KEY_HASH_SECRET")) options.key_hash_secret = secret;
    // The install's secret for the principal hashes records are bound to (docs/http.md,
    // "Whose answer a replay is"): every gateway sharing a store sets the same.
    if (const char* secret = std::getenv("IDEM_PRINCIPAL_SECRET")) options.principal_secret = secret;
    runtime = std::make_unique<Runtime>(config, *store, std::move(options));
  } catch (const ListenError& e) {
    std::cerr << "idem: " << e.what() << "\n";
    return kRuntime;
  } catch (const ConfigError& e) {  // the client listener's certificate or key (tls)
    std::cerr << "idem: " << e.what() << "\n";
    return kUsage;
  }
  std::cerr << "idem: " << runtime->serving() << std::endl;

  IoPool& pool = runtime->pool();
  asio::signal_set stop_signals(pool.main(), SIGINT, SIGTERM);
  std::function<void(const boost::system::error_code&, int)> on_stop;
  bool stopping = false;
  on_stop = [&](const boost::system::error_code& ec, int) {
    if (ec) return;
    if (stopping) {
      std::cerr << "idem: second signal: stopping without waiting for the drain" << std::endl;
      runtime->abandon();
      return;
    }
    stopping = true;
    std::cerr << "idem: shutting down" << std::endl;
    cli::notify_stopping();
    runtime->shutdown();
    stop_signals.async_wait(on_stop);
  };
  stop_signals.async_wait(on_stop);

  asio::signal_set reload_signals(pool.main(), SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_reload;
  on_reload = [&](const boost::system::error_code& ec, int) {
    if (ec) return;
    cli::notify_reloading();
    runtime->reload();
    cli::notify_ready(runtime->serving());
    reload_signals.async_wait(on_reload);
  };
  reload_signals.async_wait(on_reload);

  cli::start_watchdog(pool);
  cli::notify_ready(runtime->serving());  // under systemd (docs/admin.md): started once signals are handled
  runtime->run();
  std::cerr << "idem: stopped" << std::endl;
  if (runtime->abandoned()) {
    // Requests still in flight are coroutine frames queued on the pool's contexts, which
    // outlive this function's locals (the pool was made first): destroying them would run
    // their cleanup against a gateway already gone. Leave as a kill would, which the
    // protocol is built for: what the store acknowledged is kept, the rest turns uncertain.
    std::_Exit(kOk);
  }
  return kOk;
}

// How many live records `idem check --store` reads at most: enough to meet every key space
// in use, bounded so that a check never walks a large store.
constexpr std::size_t kDriftSample = 10'000;

// The records of the store at `uri` that `c`'s routes would orphan or misread
// (gateway/model/record_drift.h), one warning per finding, from a sample of at most
// kDriftSample live records. nullopt when the store could not be read (said on standard
// error).
std::optional<std::vector<std::string>> store_drift(const Config& c, Store& store, const std::string& uri) {
  std::vector<Record> sample;
  ListArgs args;
  args.limit = kMaxListLimit;
  bool complete = false;
  while (!complete && sample.size() < kDriftSample) {
    auto page = store.list(args);
    if (!page) {
      report(page.status(), uri);
      return std::nullopt;
    }
    for (Record& r : page->records)
      if (sample.size() < kDriftSample) sample.push_back(std::move(r));
    args.cursor = std::move(page->next_cursor);
    complete = args.cursor.empty();
  }
  std::vector<std::string> warnings;
  for (const DriftFinding& f : find_drift(c.routes, sample))
    warnings.push_back("store " + redact_uri(uri) + ": " + describe(f));
  std::cout << redact_uri(uri) << ": " << sample.size() << " live record" << (sample.size() == 1 ? "" : "s")
            << (complete ? "" : " sampled") << " checked\n";
  return warnings;
}

// `idem check FILE [--strict] [--store URI]`: the config as `idem serve` would read it,
// except that without --strict an unset variable is a warning (the machine checking a
// config often does not hold its secrets), and what it most likely does not mean
// (Config::advice: shadowed routes, safe methods) is a warning, an error with --strict.
// With --store, also the store's live records
// this config would orphan or misread (store_drift): warnings, errors under --strict; and
// that store must hold every route's responses (require_store_holds_results).
int check(const std::string& file, bool strict, const std::string& store_uri) {
  std::vector<ConfigError> warnings;
  try {
    Config c = load_config_file(file, {.strict = strict, .warnings = &warnings});
    require_admin_token_off_loopback(c);
    require_listener_tls(c);  // the files, read as `idem serve` reads them
    std::unique_ptr<Store> store;
    if (!store_uri.empty()) {
      auto opened = open_store(store_uri);
      if (!opened) {
        std::cerr << "idem: cannot open store " << redact_uri(store_uri) << ": "
                  << redact_secrets(opened.status().to_string(), store_uri) << "\n";
        return is_config_error(opened.status()) ? kUsage : kRuntime;
      }
      store = std::move(*opened);
      require_store_holds_results(c, store->max_result_bytes(), store->traits().name);
    }
    for (const ConfigError& w : warnings) std::cerr << "idem: warning: " << w.what() << "\n";
    // What the config most likely does not mean (Config::advice): errors under --strict.
    for (const ConfigError& a : c.advice)
      std::cerr << "idem: " << (strict ? "" : "warning: ") << a.what() << "\n";
    if (strict && !c.advice.empty()) return kUsage;
    std::vector<std::string> drift;
    if (store) {
      auto found = store_drift(c, *store, store_uri);
      if (!found) return kRuntime;
      drift = std::move(*found);
      for (const std::string& d : drift) std::cerr << "idem: " << (strict ? "" : "warning: ") << d << "\n";
      if (strict && !drift.empty()) return kUsage;
    }
    const std::size_t n = warnings.size() + c.advice.size() + drift.size();
    std::cout << file << ": ok (" << c.routes.size() << " route" << (c.routes.size() == 1 ? "" : "s");
    if (n != 0) std::cout << ", " << n << " warning" << (n == 1 ? "" : "s");
    std::cout << ")\n";
    return kOk;
  } catch (const ConfigError& e) {
    for (const ConfigError& w : warnings) std::cerr << "idem: warning: " << w.what() << "\n";
    std::cerr << "idem: " << e.what() << "\n";
    return kUsage;
  }
}

// `idem schema --store URI`: the DDL of a SQL store's tables, for a DBA (docs/stores.md, "The
// protocol folder and the DDL"). Asks no server. A store without tables, or a bad URI: exit 2.
int schema(const std::string& uri) {
  Result<std::string> ddl = store_ddl(uri);
  if (!ddl) {
    std::cerr << "idem: " << redact_secrets(ddl.status().message(), uri) << "\n";
    return kUsage;
  }
  std::cout << *ddl;
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"idem: an idempotency gateway, library and control API"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "idem " + std::string(kVersion), "Print the version and exit");

  std::string config_file;
  CliOverrides flags;
  std::string listen, upstream, store_uri, admin_addr;
  auto* serve_cmd = app.add_subcommand("serve", "Run the HTTP gateway");
  serve_cmd->add_option("--config", config_file, "YAML config file")->check(CLI::ExistingFile);
  serve_cmd->add_option("--listen", listen,
                        "Client-facing listener HOST:PORT, [IPV6]:PORT or :PORT (every interface)");
  serve_cmd->add_option("--upstream", upstream,
                        "The default upstream, http://HOST:PORT or https://HOST:PORT");
  serve_cmd->add_option("--store", store_uri,
                        "Store URI (memory:, sqlite:PATH, redis://, postgres://, mysql://)");
  serve_cmd->add_option("--admin", admin_addr,
                        "Admin listener HOST:PORT, [IPV6]:PORT or :PORT (every interface)");

  std::string check_file;
  bool check_strict = false;
  auto* check_cmd = app.add_subcommand("check", "Validate a config file");
  check_cmd->add_option("FILE", check_file, "YAML config file")->required();
  check_cmd->add_flag("--strict", check_strict,
                      "Unset environment variables (token_env, ${NAME}) and --store's findings are errors, "
                      "not warnings");
  std::string check_store;
  check_cmd->add_option("--store", check_store,
                        "Also open this store: it must hold every route's max_result, and live records (at "
                        "most 10,000) this config would orphan or misread are warned of");

  // The store of the commands below: --store, else --config's, else $IDEM_STORE (store_uri_of).
  const std::string store_help = "Store URI (else --config's store, else $IDEM_STORE)";
  const std::string config_help = "Take the store from this config file (its ${NAME} from the environment)";
  std::string store_config;
  std::string record_store, record_scope, record_key_space, record_key;
  auto* record_cmd = app.add_subcommand("record", "Inspect or remove a record");
  record_cmd->require_subcommand(1);
  for (const char* name : {"get", "delete"}) {
    auto* sub = record_cmd->add_subcommand(name, std::string(name) + " a record");
    sub->add_option("--store", record_store, store_help);
    sub->add_option("--config", store_config, config_help)->check(CLI::ExistingFile);
    sub->add_option("--scope", record_scope, "The record's scope (default: empty)");
    sub->add_option("--key-space", record_key_space,
                    "The route's key space: KEY is then the key as the route rendered it (default: KEY is "
                    "the stored key, <key_space>:<key>)");
    sub->add_option("KEY", record_key, "The idempotency key")->required();
  }

  std::string list_store, list_key_space, list_state, list_cursor;
  bool list_uncertain = false;
  std::optional<std::size_t> list_limit;
  auto* list_cmd = record_cmd->add_subcommand("list", "list records, newest first where the store can order");
  list_cmd->add_option("--store", list_store, store_help);
  list_cmd->add_option("--config", store_config, config_help)->check(CLI::ExistingFile);
  list_cmd->add_option("--key-space", list_key_space, "Only the records of this key space");
  list_cmd->add_option("--state", list_state, "Only pending or done records");
  list_cmd->add_flag("--uncertain", list_uncertain, "Only records whose outcome is uncertain");
  list_cmd->add_option("--limit", list_limit, "Records at most (1-1000, default 100)");
  list_cmd->add_option("--cursor", list_cursor, "Go on where a listing ended (its next_cursor)");

  std::string resolve_store, resolve_key_space, resolve_older_than, resolve_decision, resolve_body,
      resolve_content_type;
  std::optional<std::string> resolve_scope;
  std::optional<unsigned> resolve_status;
  std::optional<std::size_t> resolve_limit;
  bool resolve_dry_run = false;
  auto* resolve_cmd = record_cmd->add_subcommand("resolve",
                                                 "release or complete the records held as uncertain "
                                                 "(docs/admin.md, \"Resolving uncertain records in bulk\")");
  resolve_cmd->add_option("--store", resolve_store, store_help);
  resolve_cmd->add_option("--config", store_config, config_help)->check(CLI::ExistingFile);
  resolve_cmd->add_option("--key-space", resolve_key_space, "Only the records of this key space");
  resolve_cmd->add_option("--scope", resolve_scope, "Only the records of this scope");
  resolve_cmd->add_option("--older-than", resolve_older_than,
                          "Only records marked uncertain this long ago (10m, 2h)");
  resolve_cmd
      ->add_option("--decision", resolve_decision, "release (a retry runs) or complete (--status, --body)")
      ->required();
  resolve_cmd->add_option("--status", resolve_status, "complete: the status replayed");
  resolve_cmd->add_option("--body", resolve_body, "complete: the body replayed");
  resolve_cmd->add_option("--content-type", resolve_content_type, "complete: the body's Content-Type");
  resolve_cmd->add_option("--limit", resolve_limit, "Records at most (1-10000, default 1000)");
  resolve_cmd->add_flag("--dry-run", resolve_dry_run, "Count and list the records, change nothing");

  std::string sweep_store;
  auto* sweep_cmd = app.add_subcommand("sweep", "Remove expired records");
  sweep_cmd->add_option("--store", sweep_store, store_help);
  sweep_cmd->add_option("--config", store_config, config_help)->check(CLI::ExistingFile);

  std::string schema_store;
  auto* schema_cmd = app.add_subcommand("schema", "Print the DDL of a PostgreSQL or MySQL store's tables");
  schema_cmd->add_option(
      "--store", schema_store,
      "Store URI (postgres:// or mysql://; its table_prefix applies; else --config's store, "
      "else $IDEM_STORE)");
  schema_cmd->add_option("--config", store_config, config_help)->check(CLI::ExistingFile);

  auto* version_cmd = app.add_subcommand("version", "Print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kOk : kUsage;
  }

  if (*serve_cmd) {
    if (!listen.empty()) flags.listen = listen;
    if (!upstream.empty()) flags.upstream = upstream;
    if (!store_uri.empty()) flags.store = store_uri;
    if (!admin_addr.empty()) flags.admin = admin_addr;
    return serve(config_file, flags);
  }
  if (*check_cmd) return check(check_file, check_strict, check_store);
  if (*list_cmd) {
    const auto uri = store_uri_of(list_store, store_config);
    if (!uri) return kUsage;
    return list_records(*uri, list_key_space, list_state, list_uncertain, list_limit, std::move(list_cursor));
  }
  if (*resolve_cmd) {
    Result<ResolvePlan> plan =
        make_resolve_plan(resolve_key_space, resolve_scope, resolve_older_than, resolve_decision,
                          resolve_status, resolve_body, resolve_content_type, resolve_dry_run, resolve_limit);
    if (!plan) {
      std::cerr << "idem: " << plan.status().message() << "\n";
      return kUsage;
    }
    const auto uri = store_uri_of(resolve_store, store_config);
    if (!uri) return kUsage;
    return resolve_records(*uri, std::move(*plan));
  }
  if (*record_cmd) {
    if (!record_key_space.empty() && !is_key_space(record_key_space)) {
      std::cerr << "idem: --key-space is 1-64 letters, digits, '-', '_' and '.'\n";
      return kUsage;
    }
    const auto uri = store_uri_of(record_store, store_config);
    if (!uri) return kUsage;
    record_store = *uri;
    auto store = open_or_die(record_store);
    if (!store) return kRuntime;
    RecordId id{record_scope,
                record_key_space.empty() ? record_key : stored_key(record_key_space, record_key)};
    const std::string missing = not_found(record_scope, record_key_space, record_key);
    if (record_cmd->got_subcommand("get")) {
      auto r = store->get(std::move(id));
      if (!found(r, record_store, missing)) return kRuntime;
      std::cout << record_json(**r) << "\n";
      return kOk;
    }
    auto before = store->get(RecordId(id));
    auto r = store->remove(RecordId(id));
    const Record* was = before && *before ? &**before : nullptr;
    cli_audit("delete", id, was, !r ? "store_failed" : (*r ? "deleted" : "not_found"));
    if (!found(r, record_store, missing)) return kRuntime;
    std::cout << "removed\n";
    return kOk;
  }
  if (*sweep_cmd) {
    const auto uri = store_uri_of(sweep_store, store_config);
    if (!uri) return kUsage;
    sweep_store = *uri;
    auto store = open_or_die(sweep_store);
    if (!store) return kRuntime;
    auto n = store->sweep();
    if (!n) {
      report(n.status(), sweep_store);
      return kRuntime;
    }
    std::cout << *n << "\n";
    return kOk;
  }
  if (*schema_cmd) {
    const auto uri = store_uri_of(schema_store, store_config);
    return uri ? schema(*uri) : kUsage;
  }
  if (*version_cmd) {
    std::cout << "idem " << kVersion << "\n";
    return kOk;
  }
  return kUsage;
}
