// The client behind one Redis store: its connections, the calls in flight, their
// deadlines, and where each call goes — to the one node of redis:// (a small pool of
// pipelined connections), to the master that owns the call's slot on
// redis-cluster:// (the map from CLUSTER SLOTS; MOVED and ASK followed; the map refreshed
// after a redirect, a lost connection or CLUSTERDOWN, so a failover is survived), or to
// the master of redis+sentinel:// (a pool as for redis://, to the address the sentinels
// give: SENTINEL get-master-addr-by-name, asked of each sentinel in turn, and ROLE checked
// on every new connection; asked again after a lost connection, READONLY or a server that
// is no longer the master, so a failover is followed).
//
// A connection that cannot be made at all (refused, unresolvable) fails the calls waiting
// for it at once, `unavailable` naming the server and the reason, instead of letting them
// wait for their deadline (on redis-cluster:// they wait for a new slot map instead: a
// failover moves the slot).
//
// Every call is answered exactly once (docs/stores.md, "When a store call fails"): by its
// reply; by `unavailable` when it was not applied — it could not be written before its
// deadline (no connection, refused, or every try answered by an error proving that it did
// not run); by `deadline_exceeded` when its bytes were written and no answer came — the
// deadline passed or the connection broke — so it may have run. Calls that cannot go
// anywhere yet wait and are retried with backoff until their deadline. Replies proving
// that a command did not run (NOSCRIPT, MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING,
// READONLY...) lead to a retry, never to an answer.
//
// Thread safety: none; it lives on one io_context thread, and completes calls there.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stores/redis/redis_connection.h"

namespace idem::redis {

class Client final : public ConnectionEvents {
 public:
  // `tls`: the context for the rediss schemes (make_tls_context), else nullptr.
  Client(asio::io_context& io, Config config, Duration op_timeout,
         std::shared_ptr<asio::ssl::context> tls = nullptr);
  ~Client();

  // Sends the call (its deadline set) and answers it through call->complete.
  void start(CallPtr call);
  // The same, on this connection only (never rerouted): CLUSTER SLOTS, WAIT, INFO.
  void start_pinned(Connection& to, CallPtr call);
  // The connection to the one node of redis:// (the master of redis+sentinel://, once
  // known), or to each master of the current slot map.
  std::vector<Connection*> masters();
  // Refuses new calls; once every call is answered, closes the connections and runs
  // `stopped`.
  void shutdown(std::function<void()> stopped);

  // "redis 127.0.0.1:6379" or "redis-cluster 127.0.0.1:7001,...": for messages. Fixed.
  const std::string& describe() const { return description_; }

 private:
  void on_reply(Connection& from, CallPtr call, Reply reply) override;
  void on_down(Connection& from, std::vector<CallPtr> unsent, std::vector<CallPtr> written, Status why,
               bool reached) override;

  void dispatch(CallPtr call);
  Connection* route(const Call& call);
  Connection& connection_for(const Endpoint& e);
  void redirect(Connection& from, CallPtr call, std::string_view error);
  void wait_for_replicas(Connection& on, CallPtr call, Reply reply);
  void finish(Call& call, Result<Reply> result);

  void park(CallPtr call);
  void schedule_retry();
  void dispatch_parked();

  void refresh_slots();
  void on_slots(const Connection& from, Result<Reply> result);

  void find_master();
  void ask_sentinel(std::size_t turn);
  void on_master(Connection& sentinel, std::size_t turn, Result<Reply> result);
  void use_master(const Endpoint& master);
  bool is_master_connection(const Connection& c) const;

  void arm_deadline();
  void expire();
  void stop();

  asio::io_context& io_;
  const Config config_;
  const Duration op_timeout_;
  const std::shared_ptr<asio::ssl::context> tls_;
  std::string description_;

  std::vector<std::unique_ptr<Connection>> pool_;  // redis://: round robin
  std::size_t next_ = 0;
  std::map<std::string, std::unique_ptr<Connection>> nodes_;  // redis-cluster:// (and redirects), by name

  // redis-cluster://: the master of each slot (nullptr: unknown).
  std::vector<Connection*> slots_;
  Connection* any_master_ = nullptr;
  bool slots_stale_ = true;
  bool refreshing_ = false;
  bool first_refresh_ = false;  // the first map was asked for
  std::size_t refresh_turn_ = 0;

  // redis+sentinel://: the sentinels, asked one at a time; the master's address (pool_ goes
  // there) and whether it must be asked again first; pools of earlier masters, kept until
  // their calls are answered.
  Config master_config_;    // config_, checking ROLE
  Config sentinel_config_;  // config_ with the sentinels' credentials, no database
  std::vector<std::unique_ptr<Connection>> sentinels_;
  std::optional<Endpoint> master_;
  bool master_stale_ = true;
  bool finding_master_ = false;
  std::size_t next_sentinel_ = 0;  // the one that answered last
  std::string sentinel_errors_;    // this round's answers that named no master
  std::vector<std::unique_ptr<Connection>> retired_;

  std::vector<CallPtr> parked_;  // waiting for a connection or a slot map
  asio::steady_timer retry_timer_;
  bool retry_armed_ = false;
  Duration retry_delay_;
  std::string last_error_;  // why calls are waiting, for their deadline's message

  std::deque<CallPtr> deadlines_;  // every unanswered call, in (about) deadline order
  asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;

  std::size_t outstanding_ = 0;
  bool closing_ = false;
  bool stopped_ = false;
  std::function<void()> on_stopped_;
};

}  // namespace idem::redis
