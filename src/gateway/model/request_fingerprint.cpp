#include "gateway/model/request_fingerprint.h"

#include "gateway/model/canonical_json.h"
#include "idem/fingerprint.h"

namespace idem::gateway {

const std::string& none_fingerprint() {
  static const std::string fingerprint = Fingerprinter().add("none").finish();
  return fingerprint;
}

ProblemOr<std::string> request_fingerprint(const FingerprintRule& rule, RequestContext& request) {
  const RequestView& r = request.request();
  Fingerprinter fp;
  switch (rule.kind) {
    case FingerprintRule::Kind::none:
      return none_fingerprint();
    case FingerprintRule::Kind::body: {
      fp.add("body").add(r.method).add(r.target);
      std::optional<std::string> content_type = find_header(r.headers, "Content-Type");
      if (content_type) {
        fp.add(*content_type);
      } else {
        fp.add_absent();
      }
      fp.add(r.body);
      break;
    }
    case FingerprintRule::Kind::json: {
      const ExactJson* body = request.json_body();
      if (body == nullptr) {
        return Rejection{Problem::body_invalid,
                         "fingerprint: json needs a JSON body: " + request.json_error()};
      }
      fp.add("json").add(r.method).add(r.target).add(canonical_json(*body));
      break;
    }
    case FingerprintRule::Kind::fields:
      fp.add("fields").add(r.method).add(target_path(r.target));
      for (const KeyTemplate& field : rule.fields) {
        if (auto problem = add_to_fingerprint(field, request, fp)) return std::move(*problem);
      }
      break;
  }
  return fp.finish();
}

}  // namespace idem::gateway
