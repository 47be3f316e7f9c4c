// The PostgreSQL store's operations in flight: each is one prepared statement with its
// binary parameters, a reader for the statement's rows, and the caller's callback, which
// runs exactly once. Readers are pure: they turn rows into outcomes (postgres_ops.cpp).
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "idem/store.h"
#include "stores/postgres/postgres_sql.h"

namespace idem::postgres {

using SteadyClock = std::chrono::steady_clock;

class Op {
 public:
  Op(Stmt s, std::vector<std::string> p, std::string order)
      : stmt(s), params(std::move(p)), lock_order(std::move(order)) {}
  virtual ~Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  // Reads the statement's rows and keeps the answer. False: the statement met a row newer
  // than its snapshot and must run again (in a later transaction).
  virtual bool read(const PGresult* res) = 0;
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

  Stmt stmt;
  std::vector<std::string> params;  // binary values
  std::string lock_order;           // batches run their statements sorted by this
  // Locks a record's row and then a token's: runs in a batch of its own, so that every
  // other transaction still takes all its record rows before any token row (no deadlock).
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

// Turns a statement's rows into the outcome; false: run the statement again.
template <class T>
using Reader = bool (*)(const PGresult*, T& out);

template <class T>
class TypedOp final : public Op {
 public:
  TypedOp(Stmt s, std::vector<std::string> p, std::string order, Reader<T> reader, Callback<T> cb)
      : Op(s, std::move(p), std::move(order)), reader_(reader), cb_(std::move(cb)) {}

  bool read(const PGresult* res) override {
    again = !reader_(res, out_);
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
