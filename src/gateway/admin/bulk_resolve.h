// Resolving many uncertain records at once (docs/admin.md, "Resolving uncertain records in
// bulk"): `POST /v1/records/resolve` and `idem record resolve` select the records held as
// uncertain in a key space (and scope), older than an age, and either release them (the
// record is removed: the client's retry runs) or complete them with a given answer (it is
// replayed), or only count them (dry run). This is the plan and the selection, pure; the
// admin listener and the command line do the store calls, each record read again just
// before it is acted on. Safe for concurrent use of distinct objects.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/listing.h"
#include "idem/operations.h"
#include "idem/record.h"
#include "idem/status.h"

namespace idem::gateway {

struct ResolvePlan {
  enum class Decision { release, complete };
  std::string key_prefix;              // "<key_space>:", or "" for every key space
  std::optional<std::string> scope;    // only this scope
  std::optional<Duration> older_than;  // only records marked uncertain at least this long ago
  Decision decision = Decision::release;
  std::string answer;        // complete: the stored result (StoredResult codec) to replay
  bool dry_run = false;      // count and list, change nothing
  std::size_t limit = 1000;  // records at most per call (1..10000)
};

// The plan from POST /v1/records/resolve's JSON body: {"key_space", "scope", "older_than"
// ("10m"), "decision" ("release" | "complete"), "answer" ({"status", "body",
// "content_type"}; complete only), "dry_run", "limit"}. invalid_argument naming the field.
Result<ResolvePlan> parse_resolve_body(std::string_view body);
// The same from the command line's values ("" where a flag was not given).
Result<ResolvePlan> make_resolve_plan(std::string_view key_space, std::optional<std::string> scope,
                                      std::string_view older_than, std::string_view decision,
                                      std::optional<unsigned> answer_status, std::string_view answer_body,
                                      std::string_view answer_content_type, bool dry_run,
                                      std::optional<std::size_t> limit);

// The selection: ask next() for the store's next page until it says the listing is done,
// add() each page, then act on selected() (each one checked with unchanged() against a
// fresh read) and report each with done(); json() is the answer.
class BulkResolve {
 public:
  BulkResolve(ResolvePlan plan, std::chrono::system_clock::time_point now);

  const ResolvePlan& plan() const noexcept { return plan_; }
  std::optional<ListArgs> next() const;
  void add(ListPage page);
  const std::vector<Record>& selected() const noexcept { return selected_; }

  // True when `now` is still the uncertain record `before` was: same fence and result, so
  // no late answer replaced the mark since it was listed.
  static bool unchanged(const Record& before, const std::optional<Record>& now);
  // The commit that completes `before` with the plan's answer: only over this very mark.
  CommitArgs completion(const Record& before, std::chrono::system_clock::time_point now) const;

  // What became of one selected record: "released", "completed", "changed" (not touched:
  // it is no longer that uncertain record), "store_failed", or "matched" (dry run).
  void done(const Record& r, std::string_view decision);
  // {"dry_run":b,"decision":"release","matched":N,"applied":N,"records":[{"scope","key","fence","decision"}]}
  std::string json() const;

 private:
  ResolvePlan plan_;
  std::chrono::system_clock::time_point now_;
  std::vector<Record> selected_;
  std::vector<std::pair<const Record*, std::string>> outcomes_;
  std::string cursor_;
  bool listed_ = false;
};

const char* to_string(ResolvePlan::Decision d) noexcept;  // "release" | "complete"

// One audit line (docs/admin.md, "Tokens and roles"): JSON naming the action
// ("record.delete", "record.resolve"), when, who (`token`: a token's name, "(local)",
// "(command line)"), from where (`peer`), the record, its fence and state as read before
// (`before`; fence null when none was read) and the decision. Written to standard error
// by the admin listener and the command line alike.
std::string audit_line(std::string_view action, std::string_view token, std::string_view peer,
                       std::string_view scope, std::string_view key, const Record* before,
                       std::string_view decision);

}  // namespace idem::gateway
