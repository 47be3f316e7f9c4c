// The MySQL store's operations in flight: each is a few statements (mysql_sql.h), a reader for the
// result of the statement that answers, and the caller's callback, which runs exactly once.
// Readers are pure: they turn rows into outcomes (mysql_ops.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "idem/store.h"
#include "stores/mysql/mysql_sql.h"

namespace idem::mysql {

using SteadyClock = std::chrono::steady_clock;

// One statement's result: its rows (NULL as nullopt) and the rows it matched (INSERT, UPDATE,
// DELETE; the connection reports rows found, not only those changed).
struct Reply {
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::uint64_t matched = 0;
};

class Op {
 public:
  Op(Sql s, std::string order) : sql(std::move(s)), lock_order(std::move(order)) {}
  virtual ~Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  // Reads the answering statement's result and keeps the answer. False: the statement met a row
  // in a state it cannot answer from and must run again (in a later transaction).
  virtual bool read(const Reply& reply) = 0;
  // A step of a longer operation (sweep) made progress: it runs again with a new deadline.
  virtual bool progressing() const { return false; }

  // Each answers the caller once; later calls do nothing.
  void answer() {
    if (!std::exchange(answered_, true)) deliver();
  }
  void fail(Status s) {
    if (!std::exchange(answered_, true)) deliver_error(std::move(s));
  }
  bool answered() const noexcept { return answered_; }

  Sql sql;
  std::string lock_order;  // batches run their statements sorted by this
  // Locks a record's row and then a token's: runs in a batch of its own, so that every other
  // transaction still takes all its record rows before any token row (no deadlock).
  bool alone = false;
  SteadyClock::time_point deadline{};
  int runs = 0;
  bool again = false;  // set by the last read()

 protected:
  virtual void deliver() = 0;
  virtual void deliver_error(Status s) = 0;

 private:
  bool answered_ = false;
};

// Turns the answering statement's result into the outcome; false: run the operation again.
template <class T>
using Reader = bool (*)(const Reply&, T& out);

template <class T>
class TypedOp final : public Op {
 public:
  TypedOp(Sql s, std::string order, Reader<T> reader, Callback<T> cb)
      : Op(std::move(s), std::move(order)), reader_(reader), cb_(std::move(cb)) {}

  bool read(const Reply& reply) override {
    again = !reader_(reply, out_);
    return !again;
  }

 protected:
  void deliver() override { cb_(std::move(out_)); }
  void deliver_error(Status s) override { cb_(std::move(s)); }

 private:
  Reader<T> reader_;
  Callback<T> cb_;
  T out_{};
};

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
