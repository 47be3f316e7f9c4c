// The PostgreSQL store's operations in flight: each is one prepared statement with its
// binary parameters, a reader for the statement's rows, and the caller's callback, which
// runs exactly once. Readers are pure: they turn rows into outcomes (postgres_ops.cpp).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "idem/store.h"
#include "stores/batching/batching.h"
#include "stores/postgres/postgres_sql.h"

namespace idem::postgres {

// A prepared statement with its binary parameters.
class Op : public batching::QueuedOp<const PGresult*> {
 public:
  Op(Stmt s, std::vector<std::string> p, std::string order)
      : QueuedOp(std::move(order)), stmt(s), params(std::move(p)) {}
  Stmt stmt;
  std::vector<std::string> params;  // binary values
};

// Turns a statement's rows into the outcome; false: run the statement again.
template <class T>
using Reader = bool (*)(const PGresult*, T& out);
template <class T>
using TypedOp = batching::TypedOp<Op, T>;

// sweep(): records, then tokens, then locks, kSweepBatch rows per statement (each its own
// short transaction), until a statement deletes fewer; answers how many records went.
class SweepOp final : public Op {
 public:
  explicit SweepOp(Callback<std::uint64_t> cb);
  bool read(const PGresult* res) override;
  bool progressing() const override { return true; }

 protected:
  void deliver() override;
  void deliver_error(Status s) override { cb_(std::move(s)); }

 private:
  Callback<std::uint64_t> cb_;
  std::uint64_t records_ = 0;
  std::optional<Status> error_;
};

// ---- parameters -------------------------------------------------------------------------

// int8 in binary: 8 bytes, big-endian.
std::string int8_param(std::int64_t v);
// Where a statement takes its row lock: table, then the key, length-prefixed.
std::string lock_order(char table, const std::string& a, const std::string& b = {});

// ---- readers ----------------------------------------------------------------------------

bool read_begin(const PGresult*, BeginOutcome& out);
bool read_commit(const PGresult*, CommitOutcome& out);
bool read_release(const PGresult*, ReleaseOutcome& out);
bool read_extend(const PGresult*, ExtendOutcome& out);
bool read_get(const PGresult*, std::optional<Record>& out);
bool read_remove(const PGresult*, bool& out);
bool read_issue_token(const PGresult*, std::string& out);
bool read_consume(const PGresult*, ConsumeOutcome& out);
bool read_restore(const PGresult*, RestoreOutcome& out);
bool read_lock(const PGresult*, LockOutcome& out);
bool read_unlock(const PGresult*, UnlockOutcome& out);
bool read_extend_lock(const PGresult*, LockExtendOutcome& out);
bool read_ping(const PGresult*, Done& out);
// Every row into out.records, in order (the caller cuts the page: core::make_page).
bool read_list(const PGresult*, ListPage& out);

}  // namespace idem::postgres
