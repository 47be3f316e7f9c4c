// An in-process `idem serve` for server_fuzz: the one place that knows how the gateway's
// parts are put together (as src/cli/main.cpp does), so a change to them is fixed here.
// A memory store on a ManualClock, one IoPool thread, short ServerLimits, the client
// listener on 127.0.0.1 port 0 (no admin listener). Lives for the whole process.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gateway/admin/admin.h"
#include "gateway/http/io_pool.h"
#include "gateway/http/server.h"
#include "gateway/http/upstream.h"
#include "gateway/model/config/config.h"
#include "gateway/pipeline/gateway.h"
#include "gateway/pipeline/metrics.h"
#include "idem/clock.h"
#include "idem/open.h"

namespace idem::fuzz {

class ServedGateway {
 public:
  // `config_yaml` is completed with the upstream's address and the memory store.
  ServedGateway(const std::string& config_yaml, unsigned short upstream_port)
      : config_(gateway::load_config_text("upstream: http://127.0.0.1:" + std::to_string(upstream_port) +
                                              "\nstore: \"memory:\"\n" + config_yaml,
                                          "server_fuzz.yaml")),
        clock_(std::make_shared<ManualClock>()),
        store_(std::move(open_store("memory:", StoreOptions{.clock = clock_}).value())),
        upstream_(*config_.upstream),
        gateway_(config_, *store_, upstream_, metrics_, clock_),
        admin_(config_, *store_, metrics_, &gateway_.replay_cache()),
        server_(pool_, gateway_, admin_, metrics_.gauges(), limits()) {
    port_ = server_.listen_client({"127.0.0.1", 0}).port();
    thread_ = std::thread([this] { pool_.run(); });
  }
  ServedGateway(const ServedGateway&) = delete;
  ServedGateway& operator=(const ServedGateway&) = delete;

  unsigned short port() const { return port_; }

  // Every record, token and lock of earlier inputs expires: the store's clock moves on by
  // more than the config's longest retention, lease and token ttl (two days).
  void forget() { clock_->advance(std::chrono::hours(48)); }

  // No request between its head and its answer.
  bool idle() const { return metrics_.inflight() == 0; }

 private:
  static gateway::ServerLimits limits() {
    gateway::ServerLimits l;
    l.buffered_bodies = 1024 * 1024;
    l.header_timeout = std::chrono::seconds(1);
    l.body_timeout = std::chrono::seconds(1);
    l.write_timeout = std::chrono::seconds(1);
    l.max_connections = 64;
    return l;
  }

  gateway::Config config_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Store> store_;
  gateway::Metrics metrics_;
  gateway::IoPool pool_{1};
  gateway::UpstreamClient upstream_;
  gateway::Gateway gateway_;
  gateway::Admin admin_;
  gateway::Server server_;
  unsigned short port_ = 0;
  std::thread thread_;  // runs pool_ until the process ends
};

}  // namespace idem::fuzz
