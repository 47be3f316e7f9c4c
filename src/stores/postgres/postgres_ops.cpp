#include "stores/postgres/postgres_ops.h"

#include <algorithm>
#include <cstring>

namespace idem::postgres {
namespace {

std::int64_t int8_at(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8) return 0;
  unsigned char b[8];
  std::memcpy(b, PQgetvalue(r, row, col), 8);
  std::uint64_t v = 0;
  for (unsigned char byte : b) v = (v << 8) | byte;
  return static_cast<std::int64_t>(v);
}

std::string bytes_at(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col)));
}

char char_at(const PGresult* r, int row, int col) {
  return PQgetlength(r, row, col) > 0 ? PQgetvalue(r, row, col)[0] : '\0';
}

// For statements whose outcome is whether they changed a row (RETURNING 1).
template <class T>
bool changed(const PGresult* r, T& out, T yes, T no) {
  out = PQntuples(r) > 0 ? yes : no;
  return true;
}

// Never 0: a caller told to retry after 0 would spin.
Duration retry_after(std::int64_t us) { return Duration(std::max<std::int64_t>(us, 1)); }

}  // namespace

std::string int8_param(std::int64_t v) {
  std::string out(8, '\0');
  auto u = static_cast<std::uint64_t>(v);
  for (int i = 7; i >= 0; --i, u >>= 8) out[static_cast<std::size_t>(i)] = static_cast<char>(u & 0xff);
  return out;
}

std::string lock_order(char table, const std::string& a, const std::string& b) {
  std::string out(1, table);
  out += int8_param(static_cast<std::int64_t>(a.size()));
  out += a;
  out += b;
  return out;
}

SweepOp::SweepOp(Callback<std::uint64_t> cb)
    : Op(Stmt::sweep_records, {}, postgres::lock_order('\x7f', {})), cb_(std::move(cb)) {}

bool SweepOp::read(const PGresult* res) {
  again = true;
  if (PQntuples(res) != 1) {
    error_ = internal_error("postgres: a sweep step returned " + std::to_string(PQntuples(res)) + " rows");
    again = false;
    return true;
  }
  records_ += static_cast<std::uint64_t>(int8_at(res, 0, 0));
  if (int8_at(res, 0, 1) >= kSweepBatch) return false;  // more of this table
  if (stmt == Stmt::sweep_records) {
    stmt = Stmt::sweep_tokens;
  } else if (stmt == Stmt::sweep_tokens) {
    stmt = Stmt::sweep_locks;
  } else {
    again = false;
  }
  return !again;
}

void SweepOp::deliver() {
  if (error_) return cb_(std::move(*error_));
  cb_(records_);
}

bool read_begin(const PGresult* r, BeginOutcome& out) {
  if (PQntuples(r) == 0) return false;
  const Fence fence = static_cast<Fence>(int8_at(r, 0, 1));
  switch (char_at(r, 0, 0)) {
    case 'a':
    case 'r':
      out = BeginOutcome::acquired(fence, char_at(r, 0, 0) == 'r', static_cast<Fence>(int8_at(r, 0, 4)));
      return true;
    case 'm':
      out = BeginOutcome::mismatch();
      return true;
    case 'd':
      out = BeginOutcome::replay(fence, bytes_at(r, 0, 2), Duration(int8_at(r, 0, 3)));
      return true;
    case 'i':
      out = BeginOutcome::in_progress(retry_after(int8_at(r, 0, 3)));
      return true;
    default:
      return false;
  }
}

bool read_commit(const PGresult* r, CommitOutcome& out) {
  const char kind = PQntuples(r) > 0 ? char_at(r, 0, 0) : 'f';
  out = kind == 'c' ? CommitOutcome::committed : CommitOutcome::fenced;
  return kind != 'x';
}
bool read_release(const PGresult* r, ReleaseOutcome& out) {
  return changed(r, out, ReleaseOutcome::released, ReleaseOutcome::fenced);
}
bool read_extend(const PGresult* r, ExtendOutcome& out) {
  return changed(r, out, ExtendOutcome::extended, ExtendOutcome::fenced);
}

namespace {

// scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner
Record record_at(const PGresult* r, int row) {
  Record rec;
  rec.scope = bytes_at(r, row, 0);
  rec.key = bytes_at(r, row, 1);
  rec.state = bytes_at(r, row, 2) == "done" ? RecordState::done : RecordState::pending;
  rec.fence = static_cast<Fence>(int8_at(r, row, 3));
  rec.fingerprint = bytes_at(r, row, 4);
  if (!PQgetisnull(r, row, 5)) rec.lease_until = from_micros(int8_at(r, row, 5));
  rec.expires_at = from_micros(int8_at(r, row, 6));
  rec.result = bytes_at(r, row, 7);
  rec.owner = bytes_at(r, row, 8);
  return rec;
}

}  // namespace

bool read_get(const PGresult* r, std::optional<Record>& out) {
  if (PQntuples(r) == 0) return true;
  out = record_at(r, 0);
  return true;
}

bool read_list(const PGresult* r, ListPage& out) {
  const int rows = PQntuples(r);
  out.records.reserve(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) out.records.push_back(record_at(r, i));
  return true;
}

bool read_remove(const PGresult* r, bool& out) { return changed(r, out, true, false); }

// INSERT ... RETURNING token: one row.
bool read_issue_token(const PGresult* r, std::string& out) {
  if (PQntuples(r) == 1) out = bytes_at(r, 0, 0);
  return true;
}

bool read_consume(const PGresult* r, ConsumeOutcome& out) {
  return changed(r, out, ConsumeOutcome::consumed, ConsumeOutcome::invalid);
}
bool read_restore(const PGresult* r, RestoreOutcome& out) {
  return changed(r, out, RestoreOutcome::restored, RestoreOutcome::invalid);
}

bool read_lock(const PGresult* r, LockOutcome& out) {
  if (PQntuples(r) == 0) return false;
  switch (char_at(r, 0, 0)) {
    case 'l':
      out = LockOutcome::locked(static_cast<Fence>(int8_at(r, 0, 1)));
      return true;
    case 'b':
      out = LockOutcome::busy(retry_after(int8_at(r, 0, 2)));
      return true;
    default:
      return false;
  }
}

bool read_unlock(const PGresult* r, UnlockOutcome& out) {
  return changed(r, out, UnlockOutcome::released, UnlockOutcome::not_owner);
}
bool read_extend_lock(const PGresult* r, LockExtendOutcome& out) {
  return changed(r, out, LockExtendOutcome::extended, LockExtendOutcome::not_owner);
}

bool read_ping(const PGresult*, Done&) { return true; }

}  // namespace idem::postgres
