// The gateway put together (docs/gateway-internals.md, "Layers"): the I/O threads, the
// upstream client, the metrics, the pipeline, the admin listener and the listeners, over
// a store the caller opened, and what a process does with them: serve, reload the config,
// drain and stop (docs/operations.md, "Stopping"). `idem serve` (src/cli/main.cpp) is a
// Runtime plus the command line, the store's opening, signals and systemd; the tests and
// the server fuzzer run the same Runtime in-process, on port 0.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "gateway/admin/admin.h"
#include "gateway/http/io_pool.h"
#include "gateway/http/server.h"
#include "gateway/http/upstream.h"
#include "gateway/http/upstreams.h"
#include "gateway/model/config/config.h"
#include "gateway/pipeline/gateway.h"
#include "gateway/pipeline/metrics.h"
#include "idem/clock.h"
#include "idem/store.h"

namespace idem::gateway {

struct RuntimeOptions {
  unsigned threads = 0;  // I/O threads; 0: one per core
  // The header limit and timeouts. The listeners' caps come from the config (`limits`,
  // `admin.limits`), within `max_client_connections` (idem serve: what the open-files limit
  // leaves for client connections, each with its upstream connection): the admin listener's
  // at most half of it, the client listener's what the admin listener's leave.
  ServerLimits limits;
  std::size_t max_client_connections = SIZE_MAX;
  // What reload() reads again, with `flags` over it; "" makes reload() refuse.
  std::string config_file;
  CliOverrides flags;
  // The clock the store judges expiry by (the system clock when null), for the replay cache.
  std::shared_ptr<const Clock> clock;
  // The secret of the request log's key_hash (KeyHasher; `idem serve` reads
  // IDEM_KEY_HASH_SECRET); "" for a random one of this runtime's own.
  std::string key_hash_secret;
  // The secret of the principal hashes records are bound to (PrincipalBinder; `idem serve`
  // reads IDEM_PRINCIPAL_SECRET); "" for the public one. Every gateway of a store needs the same.
  std::string principal_secret;
};

class Runtime {
 public:
  // Builds the gateway for `config` on `store` and opens both listeners (port 0 picks a
  // free one); a control-only config (Config::control_only) opens the admin listener alone,
  // and client_endpoint() is then the default endpoint. Throws ListenError when a listener cannot be opened.
  // `store` must outlive the runtime.
  Runtime(const Config& config, Store& store, RuntimeOptions options = {});
  // Stops what start() started: shutdown(), then waits for the threads.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  boost::asio::ip::tcp::endpoint client_endpoint() const { return client_; }
  boost::asio::ip::tcp::endpoint admin_endpoint() const { return admin_ep_; }
  // "serving on 127.0.0.1:8080 (admin …, upstream …, store …)", the store's URI redacted.
  const std::string& serving() const { return serving_; }

  // Runs the I/O threads, the calling thread one of them, until the runtime stops: after
  // shutdown()'s drain, or at once after abandon(). The request log is flushed at the end.
  void run();
  // run() on a thread of its own; the destructor stops and joins it.
  void start();

  // SIGTERM: /readyz answers 503, the client listener stops accepting and idle client
  // connections close; requests in flight finish (and settles retried in the background
  // get their chance) within the longest upstream timeout + 5 s; then every connection
  // ends and run() returns. From any thread; a second call does nothing.
  void shutdown();
  // A second SIGTERM: stop without waiting. What is in flight stays pending and its records
  // turn uncertain when their leases run out (docs/operations.md); the process must then
  // end without destroying the runtime (std::_Exit), as a kill would.
  void abandon();
  bool abandoned() const noexcept { return abandoned_.load(); }
  // SIGHUP (docs/operations.md, "Reloading the config"): the config file is read again;
  // its routes, policies, tokens, admin token and upstreams apply to new requests. Listeners,
  // store and replay cache stay as they started (the log says which changes wait for a
  // restart). An invalid file changes nothing. True when applied.
  bool reload();

  Gateway& gateway() noexcept { return gateway_; }
  Admin& admin() noexcept { return admin_; }
  Metrics& metrics() noexcept { return metrics_; }
  const Metrics& metrics() const noexcept { return metrics_; }
  Server& server() noexcept { return server_; }
  IoPool& pool() noexcept { return pool_; }

 private:
  boost::asio::awaitable<void> drain(Duration bound);
  boost::asio::awaitable<void> flush_log_periodically();

  const RuntimeOptions options_;
  Store& store_;
  IoPool pool_;
  Upstreams upstreams_;
  Metrics metrics_;
  Gateway gateway_;
  Admin admin_;
  Server server_;
  boost::asio::ip::tcp::endpoint client_, admin_ep_;
  std::string serving_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> abandoned_{false};
  std::thread thread_;  // start()
};

// The longest a request in flight may take: the longest upstream_timeout of `c`.
Duration longest_upstream_timeout(const Config& c);

// admin.listen off loopback without admin.token_env: a ConfigError (docs/admin.md).
void require_admin_token_off_loopback(const Config& c);

// With `tls` on: the client listener's TLS context from its files; a ConfigError at
// tls.cert_file or tls.key_file when they cannot be loaded or do not belong together
// (docs/configuration.md, "TLS on the client listener"). Null without `tls`.
std::shared_ptr<boost::asio::ssl::context> require_listener_tls(const Config& c);

}  // namespace idem::gateway
