// Which upstream answers are final (docs/configuration.md, "Which answers are kept"): besides
// the statuses that always release a key (upstream_end.h), a route can name statuses of its
// own (`release_on`), a rule that tells a 2xx business failure from a success
// (`success_when`), and the service can ask for a release with a response header
// (kReleaseHeader, http_reply.h). A released answer reaches the client as it is and is never replayed.
// Pure; a parsed rule is immutable and safe to share between threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "idem/status.h"

namespace idem::gateway {

// `success_when`: what a 2xx answer that is kept looks like.
//   json  the JSON member at `json_path` equals one of `values` (canonical JSON, exact
//         numbers: 0, 200, "0", true)
//   text  the whole body, without leading and trailing ASCII whitespace, is one of `values`
struct SuccessRule {
  enum class Kind { none, json, text };
  Kind kind = Kind::none;
  std::string path_text;               // json: the path as written ("code", "data.status")
  std::vector<std::string> json_path;  // json: member names / array indexes, in order
  std::vector<std::string> values;     // json: canonical JSON texts; text: the texts

  friend bool operator==(const SuccessRule&, const SuccessRule&) = default;
};

// A success value as a config writes it, as canonical JSON: a plain YAML scalar that is a
// JSON number is that number ("200", "1.0" → "1"), true/false (and null) those literals, anything
// else (a quoted scalar among them) a JSON string. invalid_argument for a number whose
// exponent is beyond canonical_decimal's range.
Result<std::string> success_value(std::string_view scalar, bool quoted);

// The path of `success_when.json` ("code", "data.status", "items.0.ok"), split at '.';
// invalid_argument for an empty segment.
Result<std::vector<std::string>> success_path(std::string_view text);

// An answer as far as the rules are concerned: its status, its body when the gateway holds
// all of it (nullopt when it streams past max_result), and whether the service set
// kReleaseHeader to `true`.
struct AnswerSeen {
  unsigned status = 0;
  std::optional<std::string_view> body;
  bool release_asked = false;
};

// True when the answer releases the key on top of the statuses that always do: the service
// asked (any status), the status is in `release_on`, or a 2xx fails `success_when` — not
// JSON, the member absent, or a value other than the listed ones. A 2xx whose body is not
// held (nullopt) is not judged by `success_when`: it is kept as too large to replay.
bool releases_answer(const std::vector<unsigned>& release_on, const SuccessRule& success_when,
                     const AnswerSeen& answer);

}  // namespace idem::gateway
