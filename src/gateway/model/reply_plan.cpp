#include "gateway/model/reply_plan.h"

#include <string_view>

namespace idem::gateway {
namespace {

// What the record holds, as the rows of the table in reply_plan.h.
enum class Held { response, not_stored, uncertain, json, undecodable };

struct Row {
  Held held;
  std::optional<Problem> on_replay;  // nullopt: replay
  Problem on_reject;
};

constexpr Row kRows[] = {
    {Held::response, std::nullopt, Problem::duplicate},
    {Held::not_stored, Problem::result_not_stored, Problem::duplicate},
    {Held::uncertain, Problem::outcome_uncertain, Problem::outcome_uncertain},
    {Held::json, Problem::result_not_stored, Problem::result_not_stored},
    {Held::undecodable, Problem::result_not_stored, Problem::result_not_stored},
};

Held held(const Result<StoredResult>& stored) {
  if (!stored) return Held::undecodable;
  switch (stored->kind) {
    case StoredResult::Kind::response:
      return Held::response;
    case StoredResult::Kind::not_stored:
      return Held::not_stored;
    case StoredResult::Kind::uncertain:
      return Held::uncertain;
    case StoredResult::Kind::json:
      return Held::json;
  }
  return Held::undecodable;
}

std::string detail(Problem p, Held h, const Result<StoredResult>& stored) {
  switch (p) {
    case Problem::duplicate:
      return "a request with this key was already completed";
    case Problem::outcome_uncertain:
      return "the outcome of the first request with this key is unknown; an operator must decide";
    default:
      break;
  }
  if (h == Held::not_stored)
    return "the first response (status " + std::to_string(stored->response.status) +
           ") was too large to store";
  return "the record of this key holds no HTTP response";
}

}  // namespace

ReplyPlan reply_for(const Result<StoredResult>& stored, OnDuplicate on_duplicate) {
  const Held h = held(stored);
  for (const Row& row : kRows) {
    if (row.held != h) continue;
    const std::optional<Problem> p = on_duplicate == OnDuplicate::reject ? row.on_reject : row.on_replay;
    if (!p) return {};
    return {*p, detail(*p, h, stored)};
  }
  return {Problem::result_not_stored, "the record of this key holds no HTTP response"};
}

}  // namespace idem::gateway
