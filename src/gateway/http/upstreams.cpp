#include "gateway/http/upstreams.h"

#include <algorithm>

namespace idem::gateway {
namespace {

struct Definition {
  std::string name;
  UpstreamUrl url;
  Duration idle;
  UpstreamTls tls;
};

std::vector<Definition> definitions(const Config& config) {
  std::vector<Definition> out;
  if (config.upstream) out.push_back({"", *config.upstream, config.upstream_idle, config.upstream_tls});
  for (const NamedUpstream& u : config.upstreams) out.push_back({u.name, u.url, u.idle, u.tls});
  return out;
}

}  // namespace

bool Upstreams::Client::is(const std::string& n, const UpstreamUrl& url, Duration idle,
                           const UpstreamTls& tls) const {
  return name == n && client->url() == url && client->max_idle() == idle && client->tls() == tls;
}

UpstreamClient* Upstreams::find(const std::string& name, const UpstreamUrl& url, Duration idle,
                                const UpstreamTls& tls) const {
  for (const auto* list : {&live_, &retired_})
    for (const Client& c : *list)
      if (c.is(name, url, idle, tls)) return c.client.get();
  return nullptr;
}

UpstreamClient* Upstreams::of(const Config& config, const Route* route) {
  std::lock_guard lock(mu_);
  if (route && !route->upstream.empty()) {
    const NamedUpstream* u = config.named_upstream(route->upstream);
    return u ? find(u->name, u->url, u->idle, u->tls) : nullptr;
  }
  return config.upstream ? find("", *config.upstream, config.upstream_idle, config.upstream_tls) : nullptr;
}

void Upstreams::reload(const Config& next) {
  std::lock_guard lock(mu_);
  std::vector<Client> live;
  for (Definition& d : definitions(next)) {
    auto same =
        std::ranges::find_if(live_, [&](const Client& c) { return c.is(d.name, d.url, d.idle, d.tls); });
    if (same != live_.end()) {
      live.push_back(std::move(*same));
      live_.erase(same);
    } else {
      live.push_back({d.name, std::make_unique<UpstreamClient>(std::move(d.url), d.idle, std::move(d.tls))});
    }
  }
  for (Client& gone : live_) {
    gone.client->retire();
    retired_.push_back(std::move(gone));
  }
  live_ = std::move(live);
}

void Upstreams::close_idle() {
  std::lock_guard lock(mu_);
  for (const auto* list : {&live_, &retired_})
    for (const Client& c : *list) c.client->close_idle();
}

}  // namespace idem::gateway
