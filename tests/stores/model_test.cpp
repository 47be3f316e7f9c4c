// See model.h. Each client owns its keys, lock names and token scope, so its model
// predicts every answer exactly while all clients hammer the store at once. Time moves
// only between rounds (controllable clocks), so model and store read the same instant;
// backends on a real clock get leases long enough that time never matters.
#include "stores/model.h"

#include <cstdlib>
#include <latch>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace idem::testutil {
namespace {

using namespace std::chrono_literals;
using Kind = BeginOutcome::Kind;

// The engine (docs/design.md), as plainly as it can be written.
struct Model {
  struct Rec {
    bool done = false;
    Fence fence = 0;
    std::string fp;
    std::string owner;
    TimePoint lease_until{};
    TimePoint expires_at{};
    std::string result;
  };
  struct Token {
    bool consumed = false;
    Duration ttl{};
    TimePoint expires_at{};
  };
  struct Lock {
    std::string owner;
    Fence fence = 0;
    TimePoint expires_at{};
  };
  std::map<std::string, Rec> recs;
  std::map<std::string, Fence> highest;  // every fence ever handed out, per key or lock
  std::map<std::string, Token> tokens;
  std::map<std::string, Lock> locks;

  Rec* live(const std::string& k, TimePoint now) {
    auto it = recs.find(k);
    if (it == recs.end() || now >= it->second.expires_at) return nullptr;
    return &it->second;
  }
  Lock* held(const std::string& n, TimePoint now) {
    auto it = locks.find(n);
    if (it == locks.end() || now >= it->second.expires_at) return nullptr;
    return &it->second;
  }
};

class Client {
 public:
  Client(Store& store, const Clock& clock, int id, std::uint64_t seed, bool timed)
      : store_(store), clock_(clock), id_(id), rng_(seed), timed_(timed) {
    for (int i = 0; i < 4; ++i) keys_.push_back("c" + std::to_string(id) + "-k" + std::to_string(i));
    scope_ = "scope-" + std::to_string(id);
  }

  // Runs n random operations; false (with the reason in error()) at the first divergence.
  bool run(int n) {
    for (int i = 0; i < n && error_.empty(); ++i) step();
    return error_.empty();
  }
  const std::string& error() const { return error_; }

  // Compares every key's record with the model.
  bool check_all() {
    for (const auto& k : keys_) check_get(k);
    return error_.empty();
  }

 private:
  Duration lease() { return timed_ ? pick({10s, 30s}) : Duration(1h); }
  Duration retention() { return timed_ ? pick({20s, 60s}) : Duration(1h); }
  template <class T>
  T pick(std::initializer_list<T> xs) {
    return *(xs.begin() + std::uniform_int_distribution<std::size_t>(0, xs.size() - 1)(rng_));
  }
  const std::string& key() {
    return keys_[std::uniform_int_distribution<std::size_t>(0, keys_.size() - 1)(rng_)];
  }
  // The current fence most of the time; sometimes a stale or a made-up one.
  Fence fence_for(const std::string& k) {
    const Fence cur = m_.recs.count(k) ? m_.recs[k].fence : m_.highest[k];
    switch (std::uniform_int_distribution<int>(0, 5)(rng_)) {
      case 0:
        return cur > 0 ? cur - 1 : 0;
      case 1:
        return cur + 1;
      default:
        return cur;
    }
  }

  void fail(const std::string& what) {
    if (error_.empty()) error_ = "client " + std::to_string(id_) + ": " + what;
  }
  template <class T>
  bool ok(const Result<T>& r, const char* op) {
    if (!r) fail(std::string(op) + " failed: " + r.status().to_string());
    return r.is_ok();
  }

  void step() {
    const TimePoint now = clock_.now();
    switch (std::uniform_int_distribution<int>(0, 14)(rng_)) {
      case 0:
      case 1:
      case 2:
        return do_begin(now);
      case 3:
      case 4:
        return do_commit(now);
      case 5:
        return do_release(now);
      case 6:
        return do_extend(now);
      case 7:
        return check_get(key());
      case 8:
        return do_remove(now);
      case 9:
        return do_lock(now);
      case 10:
        return do_unlock(now);
      case 11:
        return do_issue(now);
      case 12:
        return do_consume(now);
      case 13:
        return do_restore(now);
      case 14:
        return do_abandon(now);
    }
  }

  void do_begin(TimePoint now) {
    const std::string k = key();
    BeginArgs a{scope_,  k,           pick<std::string>({"", "A", "B"}),
                lease(), retention(), pick<std::string>({"", "o1", "o2"})};
    auto r = store_.begin(a);
    if (!ok(r, "begin")) return;
    Model::Rec* rec = m_.live(k, now);
    auto expect = [&](Kind kind) {
      if (r->kind != kind)
        fail("begin " + k + ": got " + to_string(r->kind) + ", model says " + to_string(kind));
      return r->kind == kind;
    };
    if (rec && !rec->fp.empty() && !a.fingerprint.empty() && rec->fp != a.fingerprint) {
      expect(Kind::mismatch);
    } else if (rec && rec->done) {
      if (expect(Kind::replay) && (r->result != rec->result || r->fence != rec->fence))
        fail("replay of " + k);
    } else if (rec && now < rec->lease_until) {
      if (expect(Kind::in_progress) && timed_ && r->retry_after != rec->lease_until - now) {
        fail("retry_after of " + k);
      }
    } else if (expect(Kind::acquired)) {
      if (r->recovered != (rec != nullptr)) fail("recovered of " + k);
      if (r->previous_fence != (rec ? rec->fence : 0)) fail("previous_fence of " + k);
      if (r->fence <= m_.highest[k] || r->fence > kMaxFence) fail("fence did not grow for " + k);
      m_.highest[k] = r->fence;
      Model::Rec next;
      next.fence = r->fence;
      next.fp = (rec && a.fingerprint.empty()) ? rec->fp : a.fingerprint;
      next.owner = a.owner;
      next.lease_until = now + a.lease;
      next.expires_at = next.lease_until + a.retention;
      m_.recs[k] = next;
    }
  }

  void do_commit(TimePoint now) {
    const std::string k = key();
    const Fence f = fence_for(k);
    std::string result(std::uniform_int_distribution<int>(0, 40)(rng_), '\0');
    for (auto& c : result) c = static_cast<char>(rng_());
    const Duration ret = retention();
    Model::Rec* rec = m_.live(k, now);
    // A third of them may replace an uncertain marker: over a prefix of the stored result
    // (sometimes all of it), or over bytes it most likely does not start with.
    std::string over;
    if (f > 0 && pick({false, false, true})) {
      const bool prefix = rec && rec->done && !rec->result.empty() && pick({false, true});
      over = prefix ? rec->result.substr(
                          0, std::uniform_int_distribution<std::size_t>(1, rec->result.size())(rng_))
                    : std::string("\xff\0", 2);
    }
    auto r = store_.commit({scope_, k, f, result, ret, over});
    if (!ok(r, "commit")) return;
    // Done with this fence: a retried commit, committed without a change.
    const bool can = rec && !rec->done && rec->fence == f;
    const bool again = rec && rec->done && rec->fence == f;
    const bool replaces =
        rec && rec->done && rec->fence != f && !over.empty() && rec->result.starts_with(over);
    if ((*r == CommitOutcome::committed) != (can || again || replaces)) {
      return fail("commit " + k + ": got " + to_string(*r));
    }
    if (can || replaces) {
      rec->done = true;
      rec->fence = f;
      rec->result = result;
      rec->expires_at = now + ret;
      rec->lease_until = {};
    }
  }

  void do_release(TimePoint now) {
    const std::string k = key();
    const Fence f = fence_for(k);
    // Half of the releases re-arm a token too (not on a Cluster, where these keys and
    // tokens live in different slots: tested in the contract suite).
    std::optional<TokenRestore> restore;
    if (std::string_view(store_.traits().name) != "redis-cluster" && pick({false, true})) {
      restore = TokenRestore{some_token(), lease()};
    }
    auto r = store_.release({scope_, k, f, restore});
    if (!ok(r, "release")) return;
    Model::Rec* rec = m_.live(k, now);
    const bool can = rec && !rec->done && rec->fence == f;
    if ((*r == ReleaseOutcome::released) != can) return fail("release " + k + ": got " + to_string(*r));
    if (!can) return;
    m_.recs.erase(k);
    if (!restore) return;
    auto it = m_.tokens.find(restore->token);
    if (it != m_.tokens.end() && now < it->second.expires_at) {
      it->second.consumed = false;
      it->second.expires_at = now + restore->ttl;
    }
  }

  void do_abandon(TimePoint now) {
    const std::string k = key(), o = owner();
    auto r = store_.abandon({scope_, k, o});
    if (!ok(r, "abandon")) return;
    Model::Rec* rec = m_.live(k, now);
    const bool can = rec && !rec->done && rec->owner == o;
    if ((*r == ReleaseOutcome::released) != can) return fail("abandon " + k + ": got " + to_string(*r));
    if (can) m_.recs.erase(k);
  }

  void do_extend(TimePoint now) {
    const std::string k = key();
    const Fence f = fence_for(k);
    const Duration l = lease();
    auto r = store_.extend({scope_, k, f, l});
    if (!ok(r, "extend")) return;
    Model::Rec* rec = m_.live(k, now);
    const bool can = rec && !rec->done && rec->fence == f;
    if ((*r == ExtendOutcome::extended) != can) return fail("extend " + k + ": got " + to_string(*r));
    if (can) {
      const Duration ret = rec->expires_at - rec->lease_until;
      rec->lease_until = now + l;
      rec->expires_at = rec->lease_until + ret;
    }
  }

  void do_remove(TimePoint now) {
    const std::string k = key();
    auto r = store_.remove({scope_, k});
    if (!ok(r, "remove")) return;
    const bool was = m_.live(k, now) != nullptr;
    if (*r != was) fail("remove " + k);
    m_.recs.erase(k);
  }

  void check_get(const std::string& k) {
    const TimePoint now = clock_.now();
    auto r = store_.get({scope_, k});
    if (!ok(r, "get")) return;
    Model::Rec* rec = m_.live(k, now);
    if (r->has_value() != (rec != nullptr)) return fail("get " + k + ": presence differs");
    if (!rec) return;
    const Record& got = **r;
    if (got.state != (rec->done ? RecordState::done : RecordState::pending) || got.fence != rec->fence ||
        got.fingerprint != rec->fp || got.result != rec->result || got.lease_until.has_value() == rec->done ||
        got.owner != rec->owner) {
      return fail("get " + k + ": fields differ");
    }
    if (timed_ &&
        (got.expires_at != rec->expires_at || (!rec->done && *got.lease_until != rec->lease_until))) {
      fail("get " + k + ": times differ");
    }
  }

  std::string lock_name() { return "c" + std::to_string(id_) + "-lock" + pick<std::string>({"0", "1"}); }
  std::string owner() { return pick<std::string>({"o1", "o2"}); }

  void do_lock(TimePoint now) {
    const std::string n = lock_name(), o = owner();
    const Duration ttl = lease();
    auto r = store_.lock({n, o, ttl});
    if (!ok(r, "lock")) return;
    Model::Lock* l = m_.held(n, now);
    if (l && l->owner != o) {
      if (r->kind != LockOutcome::Kind::busy) fail("lock " + n + " should be busy");
      return;
    }
    if (r->kind != LockOutcome::Kind::locked) return fail("lock " + n + " should be locked");
    if (l) {
      if (r->fence != l->fence) fail("re-lock by the owner changed the fence");
      l->expires_at = now + ttl;
      return;
    }
    if (r->fence <= m_.highest[n]) fail("lock fence did not grow for " + n);
    m_.highest[n] = r->fence;
    m_.locks[n] = {o, r->fence, now + ttl};
  }

  void do_unlock(TimePoint now) {
    const std::string n = lock_name(), o = owner();
    auto r = store_.unlock({n, o});
    if (!ok(r, "unlock")) return;
    Model::Lock* l = m_.held(n, now);
    const bool can = l && l->owner == o;
    if ((*r == UnlockOutcome::released) != can) return fail("unlock " + n + ": got " + to_string(*r));
    if (can) m_.locks.erase(n);
  }

  void do_issue(TimePoint now) {
    const Duration ttl = lease();
    auto r = store_.issue_token({scope_, ttl});
    if (!ok(r, "issue_token")) return;
    if (m_.tokens.count(*r)) return fail("token issued twice");
    m_.tokens[*r] = {false, ttl, now + ttl};
    issued_.push_back(*r);
  }

  std::string some_token() {
    if (issued_.empty() || std::uniform_int_distribution<int>(0, 9)(rng_) == 0) return "made-up";
    return issued_[std::uniform_int_distribution<std::size_t>(0, issued_.size() - 1)(rng_)];
  }

  void do_consume(TimePoint now) {
    const std::string t = some_token();
    auto r = store_.consume_token({scope_, t});
    if (!ok(r, "consume_token")) return;
    auto it = m_.tokens.find(t);
    const bool can = it != m_.tokens.end() && !it->second.consumed && now < it->second.expires_at;
    if ((*r == ConsumeOutcome::consumed) != can) return fail("consume: got " + std::string(to_string(*r)));
    if (can) {
      it->second.consumed = true;
      it->second.expires_at = std::max(it->second.expires_at, now + it->second.ttl);
    }
  }

  void do_restore(TimePoint now) {
    const std::string t = some_token();
    const Duration ttl = lease();
    auto r = store_.restore_token({scope_, t, ttl});
    if (!ok(r, "restore_token")) return;
    auto it = m_.tokens.find(t);
    const bool can = it != m_.tokens.end() && now < it->second.expires_at;
    if ((*r == RestoreOutcome::restored) != can) return fail("restore: got " + std::string(to_string(*r)));
    if (can) {
      it->second.consumed = false;
      it->second.expires_at = now + ttl;
    }
  }

  Store& store_;
  const Clock& clock_;
  int id_;
  std::mt19937_64 rng_;
  bool timed_;
  std::string scope_;
  std::vector<std::string> keys_;
  std::vector<std::string> issued_;
  Model m_;
  std::string error_;
};

std::uint64_t seed_from_env() {
  if (const char* s = std::getenv("IDEM_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

TEST_P(StoreModel, RandomConcurrentClientsAgreeWithTheModel) {
  const std::uint64_t seed = seed_from_env();
  const bool timed = GetParam().controllable_clock;
  constexpr int kClients = 8, kRounds = 30, kOpsPerRound = 60;

  std::vector<Client> clients;
  clients.reserve(kClients);
  for (int i = 0; i < kClients; ++i) clients.emplace_back(*store_, *clock_, i, seed + i, timed);
  std::mt19937_64 time_rng(seed);

  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> threads;
    std::latch start(kClients);
    for (auto& c : clients) {
      threads.emplace_back([&] {
        start.arrive_and_wait();
        c.run(kOpsPerRound) && c.check_all();
      });
    }
    for (auto& t : threads) t.join();
    for (auto& c : clients) {
      ASSERT_TRUE(c.error().empty()) << c.error() << " (round " << round << ", IDEM_SEED=" << seed << ")";
    }
    if (timed)
      clock_->advance(Duration(std::uniform_int_distribution<std::int64_t>(0, 40'000'000)(time_rng)));
    if (round % 10 == 9) {
      ASSERT_TRUE(store_->sweep().is_ok());
    }
  }
}

}  // namespace
}  // namespace idem::testutil
