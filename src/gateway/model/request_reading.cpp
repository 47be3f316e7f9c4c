#include "gateway/model/request_reading.h"

#include <algorithm>
#include <array>

#include "gateway/model/principal.h"
#include "util/ascii.h"

namespace idem::gateway {
namespace {

Rejection ambiguous(std::string detail) { return {Problem::request_ambiguous, std::move(detail)}; }

// `name` folded as Go's encoding/json (bytes.EqualFold: Unicode simple folding) and .NET's
// OrdinalIgnoreCase fold the letters an ASCII name may be confused with: ASCII letters to
// lower case, and the three characters outside ASCII that fold to one of them.
std::string fold_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size(); ++i) {
    const std::string_view rest = name.substr(i);
    if (rest.starts_with("\xC5\xBF")) {  // U+017F LATIN SMALL LETTER LONG S
      out += 's';
      i += 1;
    } else if (rest.starts_with("\xC4\xB1")) {  // U+0131 LATIN SMALL LETTER DOTLESS I
      out += 'i';
      i += 1;
    } else if (rest.starts_with("\xE2\x84\xAA")) {  // U+212A KELVIN SIGN
      out += 'k';
      i += 2;
    } else {
      out += util::ascii_lower(name[i]);
    }
  }
  return out;
}

// The IANA HTTP Authentication Scheme Registry, spelled as registered.
constexpr std::array<std::string_view, 14> kRegisteredSchemes = {
    "Basic",  "Bearer",    "Concealed", "Digest",       "DPoP",        "GNAP",          "HOBA",
    "Mutual", "Negotiate", "OAuth",     "PrivateToken", "SCRAM-SHA-1", "SCRAM-SHA-256", "vapid"};

bool is_ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

bool is_base64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

// Template parts that read the header `name`, or the form or query (which look at
// Content-Type to find a form body).
bool template_reads(const KeyTemplate& t, std::string_view name) {
  for (const KeyTemplate::Part& p : t.parts()) {
    if (p.literal) continue;
    if (p.source == KeyTemplate::Source::header && util::iequals(p.name, name)) return true;
    if ((p.source == KeyTemplate::Source::form || p.source == KeyTemplate::Source::query) &&
        util::iequals(name, "Content-Type"))
      return true;
  }
  return false;
}

}  // namespace

ProblemOr<std::optional<std::string>> read_header(std::span<const HeaderField> headers,
                                                  std::string_view name) {
  const HeaderField* found = nullptr;
  for (const HeaderField& h : headers) {
    if (!util::iequals(h.name, name)) continue;
    if (found != nullptr) {
      return ambiguous(
          "the " + std::string(name) +
          " header is sent more than once: services read the first or the last, so send it once");
    }
    found = &h;
  }
  if (found == nullptr) return std::optional<std::string>();
  if (util::iequals(name, "Authorization")) return std::optional(normalize_credentials(found->value));
  return std::optional(std::string(found->value));
}

ProblemOr<std::optional<std::string>> read_parameter(const RequestView& request, std::string_view name,
                                                     bool in_form) {
  ProblemOr<std::optional<std::string>> type = read_header(request.headers, "Content-Type");
  if (!type) return std::move(type).rejection();
  const bool form_body = *type && is_form_content_type(**type);
  if (in_form && !form_body) {
    return Rejection{Problem::body_invalid,
                     "{form." + std::string(name) +
                         "} needs an application/x-www-form-urlencoded body (see Content-Type)"};
  }
  const std::string_view query = target_query(request.target);
  const std::string_view body = form_body ? request.body : std::string_view();
  const std::string_view read = in_form ? body : query;  // where the template reads
  const FormOccurrences here = form_occurrences(read, name);
  const FormOccurrences there = form_occurrences(in_form ? query : body, name);
  std::optional<std::string> value = find_form_value(read, name);
  const std::string what =
      std::string(in_form ? "the form field " : "the query parameter ") + std::string(name);
  if (here.count + there.count > 1) {
    return ambiguous(
        what +
        " is sent more than once (in the query, the form body or both): services read the first, "
        "the last, or the query's before the body's, so send it once");
  }
  if (here.semicolon || (here.count == 1 && !value)) {
    return ambiguous(what + " is next to a ';', which some services read as the end of a parameter");
  }
  if (there.count == 1) {
    return ambiguous(what + " is sent in the " + (in_form ? "query" : "form body") +
                     ", where the route does not read it but services that read both (Java's getParameter, "
                     "Rails' params, Laravel's input) do");
  }
  return value;
}

std::optional<std::string_view> member_in_another_case(const boost::json::object& object,
                                                       std::string_view name) {
  const std::string folded = fold_name(name);
  for (const auto& member : object) {
    const std::string_view key = member.key();
    // Folding keeps an ASCII byte and turns two or three bytes into one: a name of another
    // length range cannot fold to `folded`.
    if (key == name || key.size() < folded.size() || key.size() > 3 * folded.size()) continue;
    if (fold_name(key) == folded) return key;
  }
  return std::nullopt;
}

std::string normalize_credentials(std::string_view value) {
  value = trim_ows(value);
  std::size_t end = 0;
  while (end < value.size() && !is_ows(value[end])) ++end;
  const std::string_view scheme = value.substr(0, end);
  const std::string_view credentials = trim_ows(value.substr(end));
  const auto registered = std::find_if(kRegisteredSchemes.begin(), kRegisteredSchemes.end(),
                                       [&](std::string_view s) { return util::iequals(s, scheme); });
  // A value without a scheme (a bare token some services take) is case-sensitive as a whole.
  if ((credentials.empty() && registered == kRegisteredSchemes.end()) || !util::is_token(scheme))
    return std::string(value);
  std::string out;
  out.reserve(value.size() + 2);
  if (registered != kRegisteredSchemes.end()) {
    out = *registered;
  } else {
    for (char c : scheme) out += util::ascii_lower(c);
  }
  if (credentials.empty()) return out;
  out += ' ';
  out += credentials;
  // Basic credentials without their padding: "=" up to a multiple of 4 characters (a
  // length of 1 more is no base64 at all, and is left alone).
  if (out.starts_with("Basic ") && std::all_of(credentials.begin(), credentials.end(), is_base64_char) &&
      credentials.size() % 4 >= 2) {
    out.append(4 - credentials.size() % 4, '=');
  }
  return out;
}

bool route_reads_header(const Route& route, std::string_view name) noexcept {
  switch (route.key.kind) {
    case KeyRule::Kind::header:
      if (util::iequals(route.key.header, name)) return true;
      break;
    case KeyRule::Kind::token:
      if (util::iequals(kTokenHeader, name)) return true;
      break;
    case KeyRule::Kind::templated:
      if (template_reads(route.key.key_template, name)) return true;
      break;
  }
  if (route.policy.subject.kind != Subject::Kind::none && util::iequals(route.policy.subject.header, name))
    return true;
  if (route.mode != Mode::replay) return false;  // a lock takes no fingerprint and binds no one
  const Principal principal = effective_principal(route.policy);
  if ((principal.kind == Principal::Kind::header || principal.kind == Principal::Kind::jwt) &&
      util::iequals(principal.header, name))
    return true;
  const FingerprintRule& fp = route.policy.fingerprint;
  if (fp.kind == FingerprintRule::Kind::body && util::iequals(name, "Content-Type")) return true;
  for (const KeyTemplate& t : fp.fields)
    if (template_reads(t, name)) return true;
  return false;
}

std::optional<Rejection> connection_names_a_read_field(const Route& route,
                                                       std::span<const HeaderField> headers) {
  std::optional<Rejection> refusal;
  for_each_list_element(headers, "Connection", [&](std::string_view name) {
    if (refusal || !route_reads_header(route, name)) return;
    refusal = ambiguous("the Connection header names " + std::string(name) +
                        ", which this route reads: the gateway removes the fields Connection names before "
                        "forwarding, so the service would not see the value the request is identified by");
  });
  return refusal;
}

}  // namespace idem::gateway
