// Key templates (docs/gateway.md): literal text plus placeholders that take values from the
// request — `{json.a.b}` (a JSON body field; array elements by index, `{json.items.0.sku}`),
// `{header.Name}` (case-insensitive), `{query.name}`, `{path.name}`, `{form.name}`
// (an application/x-www-form-urlencoded body) and `{subject}`; a trailing '?' makes a
// placeholder optional (`{form.out_biz_no?}`), rendering "" when its value is absent.
// Parsed once at config load;
// rendered per request against a RequestContext. Pure; a parsed template is immutable and
// safe to share between threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/model/problem.h"
#include "gateway/model/request_view.h"
#include "idem/fingerprint.h"
#include "idem/status.h"

namespace idem::gateway {

class KeyTemplate {
 public:
  enum class Source { json, header, query, path, form, subject };

  struct Part {
    bool literal = true;
    Source source = Source::json;        // placeholders only
    std::string text;                    // literal text, or the placeholder as written ("{json.a.b}")
    std::string name;                    // header, query, form or path name; "" for json and subject
    std::vector<std::string> json_path;  // json: the member names / array indexes, in order
    bool optional = false;               // written with a trailing '?': "{form.out_biz_no?}"
  };

  // Reads `text`. invalid_argument naming the reason: an unclosed '{', a '}' without its
  // '{', an unknown source ("{body.x}"), a missing or malformed name ("{json}",
  // "{json.a..b}", "{header.bad name}", "{path.not-an-identifier}").
  static Result<KeyTemplate> parse(std::string_view text);

  KeyTemplate() = default;  // no parts: renders "" (never used as a key)

  const std::string& text() const noexcept { return text_; }
  const std::vector<Part>& parts() const noexcept { return parts_; }
  bool has_placeholders() const noexcept;
  bool uses(Source source) const noexcept;

 private:
  std::string text_;
  std::vector<Part> parts_;
};

// Why two placeholders of `tmpl` are not told apart in a rendered key, or nullopt when
// every two are separated by literal text holding a character outside the unreserved set
// (A-Z a-z 0-9 - . _ ~), which percent_encode never leaves in a value: with such a
// separator, two different sets of values always render two different keys. A key
// template must pass this check (the config loader refuses it otherwise); fingerprint
// templates need not, since their values are fingerprinted one field each.
std::optional<std::string> unseparated_placeholders(const KeyTemplate& tmpl);

// Appends `value` to `out` with every byte outside A-Z a-z 0-9 - . _ ~ written as %XX
// (uppercase hex), as RFC 3986 encodes: "acme:eu" → "acme%3Aeu", UTF-8 "订" → "%E8%AE%A2".
void percent_encode(std::string_view value, std::string& out);

// The key rendered from `tmpl`, or why there is none, first problem from the left:
//   key_missing   a value is absent: a missing field, header, query or form parameter,
//                 JSON null or "" (an empty header or parameter value too), unless its
//                 placeholder is optional: then it renders "" (the values it does
//                 read obey the same rules, request_ambiguous among them)
//   key_invalid   a JSON value is an object or array, or the result is longer than 255
//                 characters (is_valid_key)
// Each value is percent-encoded (percent_encode) before it is placed in the key; the
// literal text is placed as written (the config loader keeps it visible ASCII).
//   body_invalid  a {json.*} placeholder and the body is not JSON, or a {form.*} one and
//                 the Content-Type is not application/x-www-form-urlencoded
//   request_ambiguous  a value the service could read another way (request_reading.h): a
//                 header sent twice, a form or query name sent twice or in both places, a
//                 JSON member on the path also named in another case
// Values are read as request_reading.h reads them (an Authorization normalised).
// JSON strings render as their text, numbers as their exact decimal value in canonical
// form (idem::canonical_decimal: 1.0 → "1", 1e21 → "1e21", 1790000000000000001 as
// written), true and false as such.
ProblemOr<std::string> render_key(const KeyTemplate& tmpl, RequestContext& request);

// Adds the values of `tmpl` to a fingerprint, typed, one field per part: a literal as
// its text; a placeholder as the canonical JSON of its value (idem::canonical_json, exact
// numbers), so that "1" and 1
// differ while 1 and 1.0 do not (non-JSON sources are JSON strings); a missing value or
// JSON null as an absent field, distinct from every value, "" included. Objects and arrays
// are fingerprinted by their canonical form. Fails only with body_invalid and
// request_ambiguous, as render_key.
std::optional<Rejection> add_to_fingerprint(const KeyTemplate& tmpl, RequestContext& request,
                                            Fingerprinter& fp);

}  // namespace idem::gateway
