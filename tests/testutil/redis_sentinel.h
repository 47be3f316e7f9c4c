// A Redis Sentinel group of the test's own (docs/stores.md, "Redis Sentinel"): a master,
// its replicas and three sentinels (quorum 2) watching it under the name `mymaster`, each
// a redis-server on a free loopback port (testutil/redis_server.h), SIGKILLed with the
// object. Sentinels notice a dead master after 1 s (down-after-milliseconds), so a failover
// takes a few seconds.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "testutil/eventually.h"
#include "testutil/redis_server.h"

namespace idem::testutil {

// For a group that speaks TLS (rediss+sentinel://): the files every server and sentinel
// serves, and trusts for its peers.
struct SentinelTls {
  std::string cert, key, ca;
};

class SentinelGroup {
 public:
  static constexpr const char* kMaster = "mymaster";

  // `server_args` go to the master and the replicas alike. With `tls`, every server and
  // sentinel also listens on a TLS port, and replicas and sentinels reach their peers
  // there (tls-replication); their plain ports stay for the test's own checks.
  explicit SentinelGroup(int replicas = 1, std::vector<std::string> server_args = {},
                         std::optional<SentinelTls> tls = std::nullopt) {
    auto tls_args = [&](std::uint16_t port) {
      if (!tls) return std::vector<std::string>{};
      return std::vector<std::string>{"--tls-port",         std::to_string(port),
                                      "--tls-cert-file",    tls->cert,
                                      "--tls-key-file",     tls->key,
                                      "--tls-ca-cert-file", tls->ca,
                                      "--tls-auth-clients", "no",
                                      "--tls-replication",  "yes"};
    };
    auto start = [&](std::vector<std::string> args, const RedisServer::Options& options) {
      const std::uint16_t tls_port = tls ? RedisServer::pick_port() : 0;
      const auto more = tls_args(tls_port);
      args.insert(args.end(), more.begin(), more.end());
      // Its plain port is picked here too: neither listens yet, so one pick could repeat the other.
      std::uint16_t plain = 0;
      while (plain == 0 || plain == tls_port) plain = RedisServer::pick_port();
      auto server = std::make_unique<RedisServer>(args, plain, options);
      announced_.emplace(server.get(), "127.0.0.1:" + std::to_string(tls ? tls_port : server->port()));
      return server;
    };
    servers_.push_back(start(server_args, {}));
    if (!servers_[0]->started()) {
      fail("redis-server is not installed or did not start");
      return;
    }
    const std::string master = announced(0);
    const std::string master_port = master.substr(master.rfind(':') + 1);
    for (int i = 0; i < replicas; ++i) {
      auto args = server_args;
      args.insert(args.end(), {"--replicaof", "127.0.0.1", master_port});
      servers_.push_back(start(args, {}));
      if (!servers_.back()->started()) {
        fail("a replica did not start");
        return;
      }
    }
    const std::string config = std::string("sentinel monitor ") + kMaster + " 127.0.0.1 " + master_port +
                               " 2\n" + "sentinel down-after-milliseconds " + kMaster + " 1000\n" +
                               "sentinel failover-timeout " + kMaster + " 10000\n" +
                               "sentinel parallel-syncs " + kMaster + " 1\n";
    for (int i = 0; i < 3; ++i) {
      sentinels_.push_back(start({}, RedisServer::Options{.config = config, .sentinel = true}));
      if (!sentinels_.back()->started()) {
        fail("a sentinel did not start");
        return;
      }
    }
    // Ready when every replica is in sync and each sentinel knows the other two and can
    // authorize a failover.
    const bool ready = eventually(
        [&] {
          try {
            const std::string info = servers_[0]->command({"INFO", "replication"});
            if (info.find("connected_slaves:" + std::to_string(replicas)) == std::string::npos) return false;
            for (int i = 1; i <= replicas; ++i) {
              if (servers_[i]->command({"INFO", "replication"}).find("master_link_status:up") ==
                  std::string::npos)
                return false;
            }
            for (const auto& s : sentinels_) {
              if (!s->command({"SENTINEL", "CKQUORUM", kMaster}).starts_with("OK 3 usable")) return false;
            }
            return true;
          } catch (const std::exception&) {
            return false;
          }
        },
        std::chrono::seconds(30));
    if (!ready) {
      fail("the sentinels did not see the master, its replicas and each other within 30 s");
      return;
    }
    started_ = true;
  }

  bool started() const { return started_; }
  const std::string& why_not() const { return why_; }

  // "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3": the sentinels' ports (their TLS ports with TLS).
  std::string sentinels() const {
    std::string out;
    for (const auto& s : sentinels_) out += (out.empty() ? "" : ",") + announced_.at(s.get());
    return out;
  }
  // Server `i`'s address as the sentinels name it (its TLS port with TLS).
  std::string announced(std::size_t i) const { return announced_.at(servers_.at(i).get()); }
  RedisServer& sentinel(std::size_t i) { return *sentinels_.at(i); }
  // The master first, then the replicas, as started.
  RedisServer& server(std::size_t i) { return *servers_.at(i); }
  std::size_t server_count() const { return servers_.size(); }

  // The master's address as sentinel `i` gives it ("127.0.0.1:port"); nullopt when it
  // cannot be asked.
  std::optional<std::string> named_master(std::size_t i = 0) const {
    redisContext* c = redisConnect("127.0.0.1", sentinels_.at(i)->port());
    if (!c || c->err) {
      if (c) redisFree(c);
      return std::nullopt;
    }
    auto* r = static_cast<redisReply*>(redisCommand(c, "SENTINEL get-master-addr-by-name %s", kMaster));
    redisFree(c);
    std::optional<std::string> out;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
      out = std::string(r->element[0]->str, r->element[0]->len) + ":" +
            std::string(r->element[1]->str, r->element[1]->len);
    if (r) freeReplyObject(r);
    return out;
  }

  // Whether every sentinel names `address` as the master within `limit`.
  bool all_name(const std::string& address, std::chrono::seconds limit) const {
    return eventually(
        [&] {
          for (std::size_t i = 0; i < sentinels_.size(); ++i) {
            if (named_master(i) != address) return false;
          }
          return true;
        },
        limit);
  }

  // The server that is master now (by ROLE), or nullptr.
  RedisServer* current_master() {
    for (auto& s : servers_) {
      if (!s->started()) continue;
      try {
        if (s->command({"INFO", "replication"}).find("role:master") != std::string::npos) return s.get();
      } catch (const std::exception&) {
      }
    }
    return nullptr;
  }

 private:
  void fail(std::string why) { why_ = std::move(why); }

  std::vector<std::unique_ptr<RedisServer>> servers_;
  std::vector<std::unique_ptr<RedisServer>> sentinels_;
  std::map<const RedisServer*, std::string> announced_;
  std::string why_;
  bool started_ = false;
};

}  // namespace idem::testutil
