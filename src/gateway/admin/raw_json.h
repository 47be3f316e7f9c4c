// JSON results of the control API kept as their client wrote them (docs/control-api.md):
// a committed `result` is stored as its own text, and replays and records splice that text
// into their answers, so numbers no double can hold (1790000000000000001, 1e400, 30 digits)
// come back byte for byte. Pure; safe for concurrent use.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace idem::gateway {

// The text of member `name` of the JSON object `object_text`, from its first byte to its
// last (no surrounding whitespace), or nullopt when the object has no such member. For a
// text that idem::parse_exact_json accepted: one object, member names unique.
std::optional<std::string_view> member_text(std::string_view object_text, std::string_view name);

// `text` as a JSON value to place in a document: itself when it is one JSON text (by
// idem::parse_exact_json's rules), otherwise a JSON string holding it.
std::string json_value_text(std::string_view text);

// `object_json`, the serialized text of a JSON object, with the member `"name": value_json`
// appended (`value_json` must be JSON).
std::string with_member(std::string object_json, std::string_view name, std::string_view value_json);

}  // namespace idem::gateway
