// Store URIs in messages: a password in a store URI (redis://:pass@host,
// postgres://user:pass@host/db?password=...) is never printed; every message and log line
// shows it as `***` (docs/admin.md, "Passwords in store URIs"). Pure; safe for concurrent use.
#pragma once

#include <string>
#include <string_view>

#include "idem/status.h"

namespace idem {

// The URI with every secret written `***`, the rest kept as written so that a message still
// names the scheme, host, port and database:
//   - the password of the user information: `user:***@host`. For every scheme but
//     postgres:, postgresql: and mysql: (where `name@` alone is a user name), user
//     information without ':' is a password too (redis://pass@host): `***@host`.
//     The user information ends at the last '@' of the URI, so a password holding '@',
//     '/' or '?' is covered whole however a driver would split it. Without "://" (a
//     mistyped scheme, or none: `user:pass@host`) it starts at the beginning of the URI,
//     except for sqlite: and memory:, which name a file, never a host.
//   - the value of every query parameter whose name holds "password", in any case and
//     percent-decoded (libpq's `password=` and `sslpassword=`).
// A URI without secrets (memory:, sqlite:PATH, redis://host:6379) comes back unchanged.
std::string redact_uri(std::string_view uri);

// `text` — a driver's message that may quote the URI or a part of it — with every secret
// of `uri` (as redact_uri finds them, both as written and percent-decoded) replaced by
// `***`.
std::string redact_secrets(std::string_view text, std::string_view uri);

// invalid_argument when the user information of a URI holds a character that RFC 3986
// allows there only percent-encoded ('/', '?', '#', '@', '[', ']', a space, a control
// character, or a '%' not followed by two hex digits): drivers would split such a URI
// elsewhere than redact_uri does, and quote a piece of the password in their messages.
// The message names the URI redacted and says to percent-encode the password, never
// which character was found. OK for every other URI.
Status check_uri_userinfo(std::string_view uri);

// Checks a Redis store URI (redis://, redis-cluster://, redis+sentinel:// and their rediss
// forms, docs/configuration.md "Stores") as open_store parses it, without connecting:
// invalid_argument naming the part that is wrong, with the URI's passwords written ***.
// OK for every other URI (open_store checks those).
Status check_redis_uri(std::string_view uri);

}  // namespace idem
