#include "stores/mysql/mysql_ops.h"

#include <algorithm>
#include <charconv>

namespace idem::mysql {
namespace {

using Row = std::vector<std::optional<std::string>>;

std::int64_t int_at(const Row& row, std::size_t col) {
  if (col >= row.size() || !row[col]) return 0;
  std::int64_t v = 0;
  const std::string& s = *row[col];
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

std::string bytes_at(const Row& row, std::size_t col) {
  return col < row.size() && row[col] ? *row[col] : std::string();
}

char char_at(const Row& row, std::size_t col) {
  return col < row.size() && row[col] && !row[col]->empty() ? (*row[col])[0] : '\0';
}

// For statements whose outcome is whether they matched a row.
template <class T>
bool matched(const Reply& r, T& out, T yes, T no) {
  out = r.matched > 0 ? yes : no;
  return true;
}

// Never 0: a caller told to retry after 0 would spin.
Duration retry_after(std::int64_t us) { return Duration(std::max<std::int64_t>(us, 1)); }

std::string length_prefixed(std::size_t n) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, n >>= 8) out[static_cast<std::size_t>(i)] = static_cast<char>(n & 0xff);
  return out;
}

// scope, key, state, fence, fingerprint, lease_until, expires_at, result, owner
Record record_at(const Row& row) {
  Record rec;
  rec.scope = bytes_at(row, 0);
  rec.key = bytes_at(row, 1);
  rec.state = bytes_at(row, 2) == "done" ? RecordState::done : RecordState::pending;
  rec.fence = static_cast<Fence>(int_at(row, 3));
  rec.fingerprint = bytes_at(row, 4);
  if (row.size() > 5 && row[5]) rec.lease_until = from_micros(int_at(row, 5));
  rec.expires_at = from_micros(int_at(row, 6));
  rec.result = bytes_at(row, 7);
  rec.owner = bytes_at(row, 8);
  return rec;
}

}  // namespace

std::string lock_order(char table, const std::string& a, const std::string& b) {
  std::string out(1, table);
  out += length_prefixed(a.size());
  out += a;
  out += b;
  return out;
}

SweepOp::SweepOp(const Statements& statements, Callback<std::uint64_t> cb)
    : Op(statements.sweep(SweepStep::records), mysql::lock_order('\x7f', {})),
      statements_(statements),
      cb_(std::move(cb)) {
  alone = true;
}

bool SweepOp::read(const Reply& reply) {
  if (step_ == SweepStep::records) records_ += reply.matched;
  again = true;
  if (reply.matched >= static_cast<std::uint64_t>(kSweepBatch)) return false;  // more of this kind
  switch (step_) {
    case SweepStep::records:
      step_ = SweepStep::tombstones;
      break;
    case SweepStep::tombstones:
      step_ = SweepStep::tokens;
      break;
    case SweepStep::tokens:
      step_ = SweepStep::locks;
      break;
    case SweepStep::locks:
      again = false;
      return true;
  }
  sql = statements_.sweep(step_);
  return false;
}

bool read_begin(const Reply& r, BeginOutcome& out) {
  if (r.rows.empty()) return false;
  const Row& row = r.rows[0];
  const Fence fence = static_cast<Fence>(int_at(row, 1));
  switch (char_at(row, 0)) {
    case 'a':
    case 'r':
      out = BeginOutcome::acquired(fence, char_at(row, 0) == 'r', static_cast<Fence>(int_at(row, 4)));
      return true;
    case 'm':
      out = BeginOutcome::mismatch();
      return true;
    case 'd':
      out = BeginOutcome::replay(fence, bytes_at(row, 2), Duration(int_at(row, 3)));
      return true;
    case 'i':
      out = BeginOutcome::in_progress(retry_after(int_at(row, 3)));
      return true;
    default:
      return false;
  }
}

bool read_commit(const Reply& r, CommitOutcome& out) {
  out = !r.rows.empty() && char_at(r.rows[0], 0) == 'c' ? CommitOutcome::committed : CommitOutcome::fenced;
  return true;
}
bool read_release(const Reply& r, ReleaseOutcome& out) {
  return matched(r, out, ReleaseOutcome::released, ReleaseOutcome::fenced);
}
bool read_extend(const Reply& r, ExtendOutcome& out) {
  return matched(r, out, ExtendOutcome::extended, ExtendOutcome::fenced);
}

bool read_get(const Reply& r, std::optional<Record>& out) {
  if (!r.rows.empty()) out = record_at(r.rows[0]);
  return true;
}

bool read_list(const Reply& r, ListPage& out) {
  out.records.reserve(r.rows.size());
  for (const Row& row : r.rows) out.records.push_back(record_at(row));
  return true;
}

bool read_remove(const Reply& r, bool& out) { return matched(r, out, true, false); }
bool read_issued(const Reply& r, bool& out) { return matched(r, out, true, false); }

bool read_consume(const Reply& r, ConsumeOutcome& out) {
  return matched(r, out, ConsumeOutcome::consumed, ConsumeOutcome::invalid);
}
bool read_restore(const Reply& r, RestoreOutcome& out) {
  return matched(r, out, RestoreOutcome::restored, RestoreOutcome::invalid);
}

bool read_lock(const Reply& r, LockOutcome& out) {
  if (r.rows.empty()) return false;
  const Row& row = r.rows[0];
  switch (char_at(row, 0)) {
    case 'l':
      out = LockOutcome::locked(static_cast<Fence>(int_at(row, 1)));
      return true;
    case 'b':
      out = LockOutcome::busy(retry_after(int_at(row, 3)));
      return true;
    default:
      return false;
  }
}

bool read_unlock(const Reply& r, UnlockOutcome& out) {
  return matched(r, out, UnlockOutcome::released, UnlockOutcome::not_owner);
}
bool read_extend_lock(const Reply& r, LockExtendOutcome& out) {
  return matched(r, out, LockExtendOutcome::extended, LockExtendOutcome::not_owner);
}

bool read_ping(const Reply&, Done&) { return true; }

}  // namespace idem::mysql
