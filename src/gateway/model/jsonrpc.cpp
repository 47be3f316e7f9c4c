#include "gateway/model/jsonrpc.h"

#include <algorithm>

namespace idem::gateway {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void skip_space(std::string_view s, std::size_t& i) {
  while (i < s.size() && is_space(s[i])) ++i;
}

// Past the string starting at s[i] == '"'; false when it does not end.
bool skip_string(std::string_view s, std::size_t& i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      ++i;
      return true;
    }
  }
  return false;
}

// Past the value starting at s[i]: strings skipped whole, brackets counted, anything else
// up to the next ',', '}' or ']' at this level.
bool skip_value(std::string_view s, std::size_t& i) {
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      if (!skip_string(s, i)) return false;
      if (depth == 0) return true;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return true;
      if (--depth == 0) {
        ++i;
        return true;
      }
    } else if (c == ',' && depth == 0) {
      return true;
    }
    ++i;
  }
  return depth == 0;
}

}  // namespace

std::optional<std::pair<std::size_t, std::size_t>> top_level_member(std::string_view json,
                                                                    std::string_view name) {
  std::size_t i = 0;
  skip_space(json, i);
  if (i >= json.size() || json[i] != '{') return std::nullopt;
  ++i;
  for (;;) {
    skip_space(json, i);
    if (i >= json.size() || json[i] != '"') return std::nullopt;  // '}' or malformed
    const std::size_t name_start = i + 1;
    if (!skip_string(json, i)) return std::nullopt;
    const std::string_view member = json.substr(name_start, i - 1 - name_start);
    skip_space(json, i);
    if (i >= json.size() || json[i] != ':') return std::nullopt;
    ++i;
    skip_space(json, i);
    const std::size_t value_start = i;
    if (!skip_value(json, i)) return std::nullopt;
    std::size_t value_end = i;
    while (value_end > value_start && is_space(json[value_end - 1])) --value_end;
    skip_space(json, i);
    // A member is whole once a ',' or the object's '}' follows it.
    if (value_end == value_start || i >= json.size() || (json[i] != ',' && json[i] != '}'))
      return std::nullopt;
    if (member == name) return std::pair(value_start, value_end - value_start);
    if (json[i] == '}') return std::nullopt;
    ++i;
  }
}

JsonRpcCall read_jsonrpc_call(const JsonRpcRule& rule, const ExactJson* doc, std::string_view body) {
  JsonRpcCall call;
  if (doc == nullptr) return call;  // not JSON: the service answers its parse error
  if (doc->root().is_array()) {
    call.kind = JsonRpcCall::Kind::batch;
    return call;
  }
  const boost::json::object* o = doc->root().if_object();
  if (o == nullptr) return call;
  const boost::json::value* method = o->if_contains("method");
  if (method == nullptr || !method->is_string()) return call;
  if (std::ranges::find(rule.methods, std::string_view(method->get_string())) == rule.methods.end())
    return call;
  const boost::json::value* id_value = o->if_contains("id");
  if (id_value == nullptr) return call;  // a notification: no answer to replay
  call.kind = JsonRpcCall::Kind::call;
  // As sent; a member name spelled with escapes ("\u0069d") is found only by the parser,
  // and its value is then written in canonical form, the same JSON value.
  const auto id = top_level_member(body, "id");
  call.id = id ? std::string(body.substr(id->first, id->second)) : canonical_json(*doc, *id_value);
  // The call as the fingerprint sees it: what the service acts on, not which attempt this is.
  boost::json::object what;
  what["method"] = *method;
  if (const boost::json::value* params = o->if_contains("params")) {
    boost::json::value p = *params;
    if (boost::json::object* po = p.if_object()) po->erase("_meta");
    what["params"] = std::move(p);
  }
  call.canonical = canonical_json(*doc, boost::json::value(std::move(what)));
  return call;
}

std::string with_jsonrpc_id(std::string_view body, std::string_view id) {
  const auto at = top_level_member(body, "id");
  if (!at) return std::string(body);
  std::string out;
  out.reserve(body.size() + id.size());
  out.append(body.substr(0, at->first)).append(id).append(body.substr(at->first + at->second));
  return out;
}

bool is_jsonrpc_error(std::string_view body) { return top_level_member(body, "error").has_value(); }

std::string jsonrpc_error(std::string_view id, int code, std::string_view message, std::string_view data) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out.append(id).append(R"(,"error":{"code":)").append(std::to_string(code));
  out.append(R"(,"message":)").append(canonical_json_string(message));
  if (!data.empty()) out.append(R"(,"data":)").append(data);
  out.append("}}");
  return out;
}

}  // namespace idem::gateway
