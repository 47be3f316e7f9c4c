// The MySQL store's operations in flight: each is a few statements (mysql_sql.h), a reader for the
// result of the statement that answers, and the caller's callback, which runs exactly once.
// Readers are pure: they turn rows into outcomes (mysql_ops.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "idem/store.h"
#include "stores/batching/batching.h"
#include "stores/mysql/mysql_sql.h"

namespace idem::mysql {

// One statement's result: its rows (NULL as nullopt) and the rows it matched (INSERT, UPDATE,
// DELETE; the connection reports rows found, not only those changed).
struct Reply {
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::uint64_t matched = 0;
};

// An operation: its statements, and what reads the answering statement's result.
class Op : public batching::QueuedOp<const Reply&> {
 public:
  Op(Sql s, std::string order) : QueuedOp(std::move(order)), sql(std::move(s)) {}
  Sql sql;
};

// Turns the answering statement's result into the outcome; false: run the operation again.
template <class T>
using Reader = bool (*)(const Reply&, T& out);
template <class T>
using TypedOp = batching::TypedOp<Op, T>;

// sweep(): expired records, old tombstones, expired tokens, old locks, kSweepBatch rows per
// statement (each its own short transaction), until a statement deletes fewer; answers how many
// records went.
class SweepOp final : public Op {
 public:
  SweepOp(const Statements& statements, Callback<std::uint64_t> cb);
  bool read(const Reply& reply) override;
  bool progressing() const override { return true; }

 protected:
  void deliver() override { cb_(records_); }
  void deliver_error(Status s) override { cb_(std::move(s)); }

 private:
  const Statements& statements_;
  Callback<std::uint64_t> cb_;
  SweepStep step_ = SweepStep::records;
  std::uint64_t records_ = 0;
};

// Where an operation takes its row lock: table, then the key, length-prefixed.
std::string lock_order(char table, const std::string& a, const std::string& b = {});

// ---- readers ----------------------------------------------------------------------------

bool read_begin(const Reply&, BeginOutcome& out);
bool read_commit(const Reply&, CommitOutcome& out);
bool read_release(const Reply&, ReleaseOutcome& out);
bool read_extend(const Reply&, ExtendOutcome& out);
bool read_get(const Reply&, std::optional<Record>& out);
bool read_remove(const Reply&, bool& out);
bool read_issued(const Reply&, bool& out);
bool read_consume(const Reply&, ConsumeOutcome& out);
bool read_restore(const Reply&, RestoreOutcome& out);
bool read_lock(const Reply&, LockOutcome& out);
bool read_unlock(const Reply&, UnlockOutcome& out);
bool read_extend_lock(const Reply&, LockExtendOutcome& out);
bool read_ping(const Reply&, Done& out);
// Every row into out.records, in order (the caller cuts the page: core::make_page).
bool read_list(const Reply&, ListPage& out);

}  // namespace idem::mysql
