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
std::optional<Result<T>> changed(const PGresult* r, T yes, T no) {
  return Result<T>(PQntuples(r) > 0 ? yes : no);
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

std::optional<Result<BeginOutcome>> read_begin(const PGresult* r) {
  if (PQntuples(r) == 0) return std::nullopt;
  const Fence fence = static_cast<Fence>(int8_at(r, 0, 1));
  switch (char_at(r, 0, 0)) {
    case 'a':
      return Result(BeginOutcome::acquired(fence, false));
    case 'r':
      return Result(BeginOutcome::acquired(fence, true));
    case 'm':
      return Result(BeginOutcome::mismatch());
    case 'd':
      return Result(BeginOutcome::replay(fence, bytes_at(r, 0, 2)));
    case 'i':
      return Result(BeginOutcome::in_progress(retry_after(int8_at(r, 0, 3))));
    default:
      return std::nullopt;
  }
}

std::optional<Result<CommitOutcome>> read_commit(const PGresult* r) {
  return changed(r, CommitOutcome::committed, CommitOutcome::fenced);
}
std::optional<Result<ReleaseOutcome>> read_release(const PGresult* r) {
  return changed(r, ReleaseOutcome::released, ReleaseOutcome::fenced);
}
std::optional<Result<ExtendOutcome>> read_extend(const PGresult* r) {
  return changed(r, ExtendOutcome::extended, ExtendOutcome::fenced);
}

std::optional<Result<std::optional<Record>>> read_get(const PGresult* r) {
  if (PQntuples(r) == 0) return Result<std::optional<Record>>(std::nullopt);
  Record rec;
  rec.scope = bytes_at(r, 0, 0);
  rec.key = bytes_at(r, 0, 1);
  rec.state = bytes_at(r, 0, 2) == "done" ? RecordState::done : RecordState::pending;
  rec.fence = static_cast<Fence>(int8_at(r, 0, 3));
  rec.fingerprint = bytes_at(r, 0, 4);
  if (!PQgetisnull(r, 0, 5)) rec.lease_until = from_micros(int8_at(r, 0, 5));
  rec.expires_at = from_micros(int8_at(r, 0, 6));
  rec.result = bytes_at(r, 0, 7);
  return Result<std::optional<Record>>(std::move(rec));
}

std::optional<Result<bool>> read_remove(const PGresult* r) { return changed(r, true, false); }

std::optional<Result<std::string>> read_issue_token(const PGresult* r) {
  if (PQntuples(r) != 1) return Result<std::string>(internal_error("postgres: issue_token stored no token"));
  return Result<std::string>(bytes_at(r, 0, 0));
}

std::optional<Result<ConsumeOutcome>> read_consume(const PGresult* r) {
  return changed(r, ConsumeOutcome::consumed, ConsumeOutcome::invalid);
}
std::optional<Result<RestoreOutcome>> read_restore(const PGresult* r) {
  return changed(r, RestoreOutcome::restored, RestoreOutcome::invalid);
}

std::optional<Result<LockOutcome>> read_lock(const PGresult* r) {
  if (PQntuples(r) == 0) return std::nullopt;
  switch (char_at(r, 0, 0)) {
    case 'l':
      return Result(LockOutcome::locked(static_cast<Fence>(int8_at(r, 0, 1))));
    case 'b':
      return Result(LockOutcome::busy(retry_after(int8_at(r, 0, 2))));
    default:
      return std::nullopt;
  }
}

std::optional<Result<UnlockOutcome>> read_unlock(const PGresult* r) {
  return changed(r, UnlockOutcome::released, UnlockOutcome::not_owner);
}
std::optional<Result<LockExtendOutcome>> read_extend_lock(const PGresult* r) {
  return changed(r, LockExtendOutcome::extended, LockExtendOutcome::not_owner);
}

std::optional<Result<Done>> read_ping(const PGresult*) { return Result(Done{}); }

}  // namespace idem::postgres
