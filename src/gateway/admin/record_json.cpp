#include "gateway/admin/record_json.h"

#include <optional>

#include <boost/json.hpp>

#include "gateway/admin/raw_json.h"

#include "gateway/model/stored_result.h"
#include "util/rfc3339.h"

namespace idem::gateway {

namespace {

// Everything but a json result's value, which record_json splices in as it was written.
boost::json::object record_object(const Record& record, std::optional<std::string>& value) {
  boost::json::object o;
  o["scope"] = record.scope;
  o["key"] = record.key;
  o["state"] = to_string(record.state);
  o["fence"] = record.fence;
  o["expires_at"] = util::rfc3339(record.expires_at, util::SubSecond::microseconds);
  if (record.state == RecordState::pending && record.lease_until)
    o["lease_until"] = util::rfc3339(*record.lease_until, util::SubSecond::microseconds);
  if (record.state == RecordState::done) {
    Result<StoredResult> r = decode_stored_result(record.result);
    if (!r) {
      o["result"] = "unknown";
    } else {
      switch (r->kind) {
        case StoredResult::Kind::response:
          o["result"] = "response";
          o["response_status"] = r->response.status;
          break;
        case StoredResult::Kind::uncertain:
          o["result"] = "uncertain";
          // The attempt the service may have received: what an operator asks it about
          // (docs/operations.md, "Uncertain records"). Absent in records of earlier releases.
          if (r->mark.fence != 0) {
            boost::json::object m;
            m["fence"] = r->mark.fence;
            m["instance"] = r->mark.instance;
            m["at"] = util::rfc3339(TimePoint(std::chrono::milliseconds(r->mark.at_ms)),
                                    util::SubSecond::microseconds);
            o["uncertain"] = std::move(m);
          }
          break;
        case StoredResult::Kind::not_stored:
          o["result"] = "not_stored";
          o["response_status"] = r->response.status;
          break;
        case StoredResult::Kind::json: {
          o["result"] = "json";
          value = json_value_text(r->json);
          break;
        }
      }
    }
  }
  return o;
}

}  // namespace

std::string record_json(const Record& record) {
  std::optional<std::string> value;
  std::string text = boost::json::serialize(record_object(record, value));
  return value ? with_member(std::move(text), "value", *value) : text;
}

}  // namespace idem::gateway
