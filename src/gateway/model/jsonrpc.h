// JSON-RPC 2.0 routes (`mode: jsonrpc`; docs/configuration.md, "JSON-RPC routes";
// docs/recipes/mcp-tool-server.md): one URL carries many calls, each with its own `id`, so a
// route protects only the calls whose method it lists, fingerprints a call without its `id`,
// answers a repeat with the stored answer carrying the repeat's `id`, and answers its own
// refusals as JSON-RPC error objects. Pure; safe for concurrent use.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/model/canonical_json.h"

namespace idem::gateway {

// `jsonrpc_methods`: the JSON-RPC methods a `mode: jsonrpc` route protects.
struct JsonRpcRule {
  std::vector<std::string> methods{"tools/call"};
};

// What a JSON-RPC route makes of a request body.
struct JsonRpcCall {
  enum class Kind {
    call,   // a request (it has an `id`) for a listed method: protected
    pass,   // anything else (another method, a notification, not a JSON-RPC object): forwarded
    batch,  // a JSON array: refused (docs/configuration.md, "JSON-RPC routes")
  };
  Kind kind = Kind::pass;
  // call: the `id` member's value as sent (its JSON text; canonical when the member's name
  // is written with escapes)
  std::string id;
  std::string canonical;  // call: the call without `id`, `jsonrpc` and `params._meta`, canonical
};

// `doc` is the body parsed (nullptr when it is not JSON), `body` its text.
JsonRpcCall read_jsonrpc_call(const JsonRpcRule& rule, const ExactJson* doc, std::string_view body);

// Where the value of the member `name` of the top-level object of `json` lies: (offset, size).
// nullopt when `json` is not an object or has no such member (a member name written with
// escapes is not recognised). Expects well-formed JSON; stops at nullopt otherwise.
std::optional<std::pair<std::size_t, std::size_t>> top_level_member(std::string_view json,
                                                                    std::string_view name);

// `body` with the value of its top-level `id` replaced by `id` (a JSON text), every other
// byte kept; `body` unchanged when it has no top-level `id`.
std::string with_jsonrpc_id(std::string_view body, std::string_view id);

// True when `body` is a JSON-RPC error answer: a top-level object with an `error` member.
bool is_jsonrpc_error(std::string_view body);

// The code of every error the gateway answers on a JSON-RPC route (JSON-RPC 2.0 reserves
// -32000 to -32099 for server errors); the problem itself goes in `error.data`.
inline constexpr int kJsonRpcGatewayError = -32000;
// The code a batch is refused with (JSON-RPC 2.0's "Invalid Request").
inline constexpr int kJsonRpcInvalidRequest = -32600;

// {"jsonrpc":"2.0","id":<id>,"error":{"code":<code>,"message":<message>[,"data":<data>]}}
// `id` and `data` are JSON texts (`data` omitted when empty).
std::string jsonrpc_error(std::string_view id, int code, std::string_view message,
                          std::string_view data = {});

}  // namespace idem::gateway
