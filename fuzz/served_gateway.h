// An in-process `idem serve` for server_fuzz: the gateway's Runtime (app/runtime.h), as
// src/cli/main.cpp runs it, on a memory store with a ManualClock, one I/O thread, 1 s
// timeouts, 64 connections and 1 MiB of bodies, both listeners on 127.0.0.1 port 0. Lives for
// the whole process.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "gateway/app/runtime.h"
#include "gateway/model/config/config.h"
#include "idem/clock.h"
#include "idem/open.h"

namespace idem::fuzz {

class ServedGateway {
 public:
  // `config_yaml` is completed with the upstream's address and the memory store.
  ServedGateway(const std::string& config_yaml, unsigned short upstream_port)
      : config_(config(config_yaml, upstream_port)),
        clock_(std::make_shared<ManualClock>()),
        store_(std::move(open_store("memory:", StoreOptions{.clock = clock_}).value())),
        runtime_(config_, *store_, options(clock_)) {
    port_ = runtime_.client_endpoint().port();
    runtime_.start();
  }
  ServedGateway(const ServedGateway&) = delete;
  ServedGateway& operator=(const ServedGateway&) = delete;

  unsigned short port() const { return port_; }

  // Every record, token and lock of earlier inputs expires: the store's clock moves on by
  // more than the config's longest retention, lease and token ttl (two days).
  void forget() { clock_->advance(std::chrono::hours(48)); }

  // No request between its head and its answer.
  bool idle() const { return runtime_.metrics().inflight() == 0; }

 private:
  static gateway::Config config(const std::string& config_yaml, unsigned short upstream_port) {
    gateway::Config c =
        gateway::load_config_text("upstream: http://127.0.0.1:" + std::to_string(upstream_port) +
                                      "\nstore: \"memory:\"\nlimits:\n  connections: 64\n  buffered_bodies: "
                                      "1MiB\n  header_timeout: 1s\n  body_timeout: 1s\n" +
                                      config_yaml,
                                  "server_fuzz.yaml");
    c.listen = {"127.0.0.1", 0};
    c.admin.listen = {"127.0.0.1", 0};
    return c;
  }
  static gateway::RuntimeOptions options(std::shared_ptr<ManualClock> clock) {
    gateway::RuntimeOptions o;
    o.threads = 1;
    o.limits = limits();
    o.clock = std::move(clock);
    return o;
  }
  static gateway::ServerLimits limits() {
    gateway::ServerLimits l;
    l.write_timeout = std::chrono::seconds(1);
    return l;
  }

  gateway::Config config_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Store> store_;
  gateway::Runtime runtime_;  // its I/O thread runs until the process ends
  unsigned short port_ = 0;
};

}  // namespace idem::fuzz
