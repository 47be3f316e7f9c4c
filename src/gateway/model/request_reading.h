// One request, one reading (docs/gateway.md, "One request, one reading"): what a key,
// subject or fingerprint takes from a request is read the way the service behind the
// gateway will read it, or the request is refused as `request_ambiguous`. Where frameworks
// disagree among themselves (the first of two values or the last, a member name in its
// case or in any case), no reading is safe, so a value that could be read two ways is not
// read at all. Each rule here names the frameworks it keeps in step with. Pure; safe for
// concurrent use.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "gateway/model/problem.h"
#include "gateway/model/request_view.h"
#include "gateway/model/route.h"

namespace idem::gateway {

// The value of the header `name`, or nullopt when it is absent. request_ambiguous when it
// comes in more than one field line: Go's Header.Get and Spring's getHeader read the
// first, others the last or all of them joined. An Authorization value is read as
// normalize_credentials gives it.
ProblemOr<std::optional<std::string>> read_header(std::span<const HeaderField> headers,
                                                  std::string_view name);

// The value of the query parameter (`in_form` false) or form field (true) `name`: from
// the query, or from the body when it is application/x-www-form-urlencoded. The name must
// occur once across both, and its pair hold no ';'; request_ambiguous otherwise, since
// PHP and Rails read the last of two values and idem the first, Java's getParameter and
// Rails' params the query's before the body's and PHP's $_POST or Laravel the body's, and
// Rack before 3 and Python before 3.9.2 split pairs at ';' too. body_invalid for a form
// field when the body is not a form (or its Content-Type is sent twice). nullopt when the
// name is absent.
ProblemOr<std::optional<std::string>> read_parameter(const RequestView& request, std::string_view name,
                                                     bool in_form);

// The name of a member of `object` other than `name` that Go's encoding/json or ASP.NET
// Core (System.Text.Json with case-insensitive names) would take for the member `name`:
// the same name in another case. Letters are compared as those decoders fold them, which
// beyond ASCII makes 'ſ' (U+017F) an 's', the Kelvin sign (U+212A) a 'k' and 'ı' (U+0131)
// an 'i'. nullopt when there is none.
std::optional<std::string_view> member_in_another_case(const boost::json::object& object,
                                                       std::string_view name);

// An Authorization value as the service reads it (RFC 9110 §11.4): its scheme, which is
// case-insensitive, in one spelling (the registered one for the schemes IANA lists:
// "Bearer", "Basic", "Digest"..., lower case for any other), then one space and the
// credentials without the whitespace around them; Basic credentials with their base64
// padding restored ("dXNlcjpwdw" is "dXNlcjpwdw==", as Java's and Node's decoders read
// it). So `Bearer abc`, `bearer abc` and `Bearer  abc` are one value, and one subject.
// A value whose scheme is spelled in its registered spelling, followed by one space, is
// unchanged (so are subjects hashed from it before).
std::string normalize_credentials(std::string_view value);

// The Connection header names a field this route reads (its key or token header, its
// subject's header, its principal's header (principal.h), a {header.*} of its key or
// fingerprint, or Content-Type when it reads form fields, query parameters or
// `fingerprint: body`): the gateway would remove that field before forwarding (RFC 9110
// §7.6.1), so it would key on a value the service never sees. request_ambiguous naming
// the field; nullopt otherwise.
std::optional<Rejection> connection_names_a_read_field(const Route& route,
                                                       std::span<const HeaderField> headers);

// True when `route` reads the header `name` (ASCII case-insensitive), as above.
bool route_reads_header(const Route& route, std::string_view name) noexcept;

}  // namespace idem::gateway
