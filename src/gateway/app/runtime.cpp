#include "gateway/app/runtime.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "gateway/http/tls_context.h"
#include "idem/open.h"
#include "idem/store_uri.h"
#include "util/asio_tokens.h"

namespace idem::gateway {
namespace asio = boost::asio;

Duration longest_upstream_timeout(const Config& c) {
  Duration d = c.defaults.upstream_timeout;
  for (const auto& u : c.upstreams)
    if (u.timeout) d = std::max(d, *u.timeout);
  for (const auto& r : c.routes) d = std::max(d, r.policy.upstream_timeout);
  return d;
}

void require_admin_token_off_loopback(const Config& c) {
  if (!c.admin.listen.is_loopback() && !c.admin.has_tokens())
    throw ConfigError("", 0, "admin.listen",
                      "refusing a non-loopback admin address (" + c.admin.listen.to_string() +
                          ") without admin.token_env or admin.tokens");
}

std::shared_ptr<asio::ssl::context> require_listener_tls(const Config& c) {
  if (!c.tls.on()) return nullptr;
  return listener_tls_context(c.tls, c.source);
}

namespace {

// The listeners' limits: the options' header limit and timeouts, the config's caps.
ServerLimits server_limits(const Config& config, const RuntimeOptions& options) {
  ServerLimits l = options.limits;
  l.client = config.limits;
  l.admin = config.admin.limits;
  // The file descriptors that max_client_connections leaves are shared: an admin connection
  // takes one, a client connection two (its upstream connection's too), and the admin
  // listener at most half of what the clients could have.
  const std::size_t budget = options.max_client_connections;
  l.admin.connections = std::min(l.admin.connections, std::max<std::size_t>(budget / 2, 1));
  l.admin.connections_per_client = std::min(l.admin.connections_per_client, l.admin.connections);
  l.client.connections =
      std::min(l.client.connections,
               budget == SIZE_MAX ? budget : std::max<std::size_t>(budget - l.admin.connections / 2, 1));
  l.client.connections_per_client = std::min(l.client.connections_per_client, l.client.connections);
  return l;
}

}  // namespace

Runtime::Runtime(const Config& config, Store& store, RuntimeOptions options)
    : options_(std::move(options)),
      store_(store),
      pool_(options_.threads ? options_.threads : std::max(1u, std::thread::hardware_concurrency())),
      upstreams_(config),
      // Latency buckets reach the longest timeout and the store's deadline
      // (docs/observability.md).
      metrics_(MetricsOptions{longest_upstream_timeout(config), StoreOptions{}.op_timeout}),
      gateway_(config, store, upstreams_, metrics_, options_.clock, options_.key_hash_secret,
               options_.principal_secret),
      admin_(config, store, metrics_, &gateway_.replay_cache()),
      server_(pool_, gateway_, admin_, metrics_.gauges(), server_limits(config, options_)) {
  // Control-only: no client listener at all, rather than one that answers 404 to every
  // request: nothing can be sent to it by mistake, and no port is taken
  // (docs/control-api.md, "A gateway for the control API alone").
  if (!config.control_only()) {
    server_.set_tls(require_listener_tls(config));
    client_ = server_.listen_client(config.listen);
  }
  admin_ep_ = server_.listen_admin(config.admin.listen);
  std::ostringstream s;
  if (config.control_only())
    s << "serving the control API alone on admin " << admin_ep_ << " (no upstream, no client listener, store "
      << redact_uri(config.store) << ")";
  else {
    s << "serving on " << client_ << (config.tls.on() ? " with TLS" : "") << " (admin " << admin_ep_
      << ", upstream " << (config.upstream ? config.upstream->text : "none");
    for (const NamedUpstream& u : config.upstreams) s << ", upstreams." << u.name << " " << u.url.text;
    s << ", store " << redact_uri(config.store) << ")";
  }
  serving_ = s.str();
}

Runtime::~Runtime() {
  if (!thread_.joinable()) return;
  shutdown();
  thread_.join();
}

void Runtime::run() {
  asio::co_spawn(pool_.main(), flush_log_periodically(), asio::detached);
  pool_.run();
  gateway_.flush_log();
}

void Runtime::start() {
  thread_ = std::thread([this] { run(); });
}

void Runtime::shutdown() {
  if (stopping_.exchange(true)) return;
  admin_.set_draining();
  server_.shutdown();
  asio::co_spawn(pool_.main(), drain(longest_upstream_timeout(*gateway_.config()) + std::chrono::seconds(5)),
                 asio::detached);
}

void Runtime::abandon() {
  abandoned_.store(true);
  stopping_.store(true);
  pool_.stop();
}

asio::awaitable<void> Runtime::drain(Duration bound) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while ((!server_.drained() || gateway_.settling()) && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(util::kUseTuple);
  }
  // The admin listener served while the drain lasted; now every session ends, within the
  // store's call deadline (an admin request may be waiting on the store).
  server_.close();
  const auto closed_by =
      std::chrono::steady_clock::now() + StoreOptions{}.op_timeout + std::chrono::seconds(1);
  while (!server_.closed() && std::chrono::steady_clock::now() < closed_by) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(util::kUseTuple);
  }
  upstreams_.close_idle();
  pool_.stop();
}

// Writes the gathered request log lines every 100 ms (Gateway::flush_log).
asio::awaitable<void> Runtime::flush_log_periodically() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    timer.expires_after(std::chrono::milliseconds(100));
    auto [ec] = co_await timer.async_wait(util::kUseTuple);
    gateway_.flush_log();
    if (ec) co_return;
  }
}

namespace {

// One line to standard error in one write: it is unbuffered, so a line made of several `<<`
// leaves in pieces that another thread's output, or a reader of the log, can find half-written.
void say(const std::string& line) { std::cerr << line + "\n" << std::flush; }

}  // namespace

bool Runtime::reload() {
  const std::string& file = options_.config_file;
  if (file.empty()) {
    say("idem: SIGHUP: there is no --config file to reload");
    return false;
  }
  const std::shared_ptr<const Config> running = gateway_.config();
  Config next;
  try {
    next = load_config_file(file);
    apply_overrides(next, options_.flags);
    require_upstream(next);
    // The listeners stay as they started: a control-only gateway has no client listener to
    // serve routes on, and a gateway with one keeps its routes.
    if (next.control_only() != running->control_only())
      throw ConfigError(file, 0, "upstream",
                        running->control_only() ? "a restart is needed to serve routes: this gateway started "
                                                  "without upstream and routes (the control API alone)"
                                                : "a restart is needed to serve the control API alone: this "
                                                  "gateway started with a client listener");
    require_store_holds_results(next, store_.max_result_bytes(), store_.traits().name);
  } catch (const ConfigError& e) {
    say(std::string("idem: reload failed, the running config is kept: ") + e.what());
    metrics_.count_reload(false);
    return false;
  }
  std::vector<std::string> kept;
  auto keep = [&](const char* key, auto& value, const auto& old) {
    if (value == old) return;
    value = old;
    kept.push_back(key);
  };
  keep("listen", next.listen, running->listen);
  keep("admin.listen", next.admin.listen, running->admin.listen);
  keep("store", next.store, running->store);
  keep("replay_cache", next.replay_cache, running->replay_cache);
  keep("limits", next.limits, running->limits);
  keep("admin.limits", next.admin.limits, running->admin.limits);
  // TLS is turned on or off by a restart; its files are read again on every reload, so a
  // renewed certificate is taken up (docs/operations.md, "TLS at the edge").
  if (next.tls.on() != running->tls.on()) {
    next.tls = running->tls;
    kept.push_back("tls");
  }
  std::shared_ptr<asio::ssl::context> tls;
  try {
    // The running admin address with the new token setting: never an open admin port.
    require_admin_token_off_loopback(next);
    if (!running->control_only()) tls = require_listener_tls(next);
  } catch (const ConfigError& e) {
    say(std::string("idem: reload failed, the running config is kept: ") + e.what());
    metrics_.count_reload(false);
    return false;
  }
  auto shared = std::make_shared<const Config>(std::move(next));
  // The upstreams first: a request matched under the new config finds its upstream's client
  // (docs/gateway.md, "Several services behind one gateway").
  upstreams_.reload(*shared);
  // New connections handshake with the new certificate; established ones keep theirs.
  if (tls) server_.set_tls(std::move(tls));
  gateway_.reload(shared);
  admin_.reload(shared);
  metrics_.count_reload(true);
  std::string line = "idem: reloaded " + file + " (" + std::to_string(shared->routes.size()) + " route" +
                     (shared->routes.size() == 1 ? "" : "s") + ")";
  for (std::size_t i = 0; i < kept.size(); ++i) line += (i == 0 ? "; kept the running " : ", ") + kept[i];
  if (!kept.empty()) line += " (a restart applies them)";
  say(line);
  return true;
}

}  // namespace idem::gateway
