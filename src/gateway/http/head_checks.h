// The checks every request head passes on either listener before anything else happens
// (docs/http.md, "400 request-invalid, 431"): RFC 9112 framing that servers on the way could
// read differently, methods in another case, and targets that frameworks route
// differently. Pure: decided from the head alone, no I/O, tested row by row
// (tests/gateway/http/head_checks_test.cpp). Safe for concurrent use.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>

#include "gateway/model/problem.h"

namespace idem::gateway {

// Why a head is refused, and the HTTP version to answer in (the request's, or 1.1 for a
// version this gateway does not speak); the connection closes after the answer.
struct HeadRefusal {
  Problem problem;
  std::string detail;
  unsigned version = 11;
};

// The refusal of an HTTP version other than 1.0 and 1.1 (505, answered in HTTP/1.1).
HeadRefusal another_version_refusal();

// The refusal `head` earns, or nullopt when it may be served. On the client listener
// (`admin` false) an HTTP/1.1 request without Host is refused too. `admin`: the admin listener,
// where an encoded '/' or '\' in the path passes (see origin_form). Rewrites an
// absolute-form target to its origin-form.
std::optional<HeadRefusal> refuse_head(boost::beast::http::request_header<>& head, bool admin);

// The request target in origin-form ("/path?query"), or nullopt when it cannot be served.
// An absolute-form target ("http://host/orders": a scheme before "://") is reduced to its
// origin-form, "?q" becomes "/?q". Refused, because frameworks route them differently and
// a protected path could hide behind one: a fragment ('#'), a backslash (also encoded), an
// encoded '/', and dot segments ("/a/../orders", also percent-encoded, also with
// ";params"). On the admin listener (`admin`) an encoded '/' or '\' passes, and so does a
// dot segment whose dots or ';' are percent-encoded: nothing is forwarded there, and
// /v1/records/{scope}/{key} splits the path at its literal '/' before decoding each
// segment, so %2F and %5C are how a key holding '/' or '\' is named, and "%2E%2E" or
// "..%3Bx" how a scope or key ".." or "..;x" is (only a literal "." or ".." segment, with
// or without ";params", is refused there).
std::optional<std::string> origin_form(std::string_view target, bool admin);

// Whether the request line in `data` ends in a well-formed version other than HTTP/1.x
// ("PRI * HTTP/2.0", the HTTP/2 prior-knowledge preface), which earns a 505, not a 400.
bool speaks_another_version(std::string_view data);

}  // namespace idem::gateway
