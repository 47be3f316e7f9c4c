// The gateway's upstreams (docs/gateway.md, "Several services behind one gateway"): the
// default `upstream` and each of `upstreams`, each a client with its own keep-alive pool.
// A reload (SIGHUP) makes clients for the upstreams that are new or changed; an unchanged
// one keeps its client and pool. A changed or removed upstream's client is retired: its idle
// connections are closed and no connection goes back to its pool, while the requests that
// were matched with the config naming it finish on it. Retired clients are kept (a few
// hundred bytes each) as long as the registry, so a response still streaming from one never
// outlives it. Safe for concurrent use.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/http/upstream.h"
#include "gateway/model/config/config.h"

namespace idem::gateway {

class Upstreams {
 public:
  explicit Upstreams(const Config& config) { reload(config); }

  // The client for a request of `route` (null: a request on no route), matched under
  // `config`: the route's named upstream, else the default; null when `config` has no
  // default upstream and the request needs it.
  UpstreamClient* of(const Config& config, const Route* route);
  // The upstreams of `next` from now on.
  void reload(const Config& next);
  // Closes every idle pooled connection (shutdown).
  void close_idle();

 private:
  struct Client {
    std::string name;  // "" for the default upstream
    std::unique_ptr<UpstreamClient> client;
    bool is(const std::string& n, const UpstreamUrl& url, Duration idle, const UpstreamTls& tls) const;
  };
  // The client of this definition: the live one, else a retired one (a request matched
  // before a reload), else null. Requires mu_.
  UpstreamClient* find(const std::string& name, const UpstreamUrl& url, Duration idle,
                       const UpstreamTls& tls) const;

  std::mutex mu_;
  std::vector<Client> live_;     // guarded by mu_
  std::vector<Client> retired_;  // guarded by mu_
};

}  // namespace idem::gateway
