#include "gateway/admin/record_json.h"

#include <cstdio>
#include <ctime>

#include <optional>

#include <boost/json.hpp>

#include "gateway/admin/raw_json.h"

#include "gateway/stored_result.h"

namespace idem::gateway {

std::string rfc3339(TimePoint t) {
  const std::int64_t us = to_micros(t);
  std::int64_t secs = us / 1'000'000;
  std::int64_t frac = us % 1'000'000;
  if (frac < 0) {
    frac += 1'000'000;
    --secs;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(frac));
  return buf;
}

namespace {

// Everything but a json result's value, which record_json splices in as it was written.
boost::json::object record_object(const Record& record, std::optional<std::string>& value) {
  boost::json::object o;
  o["scope"] = record.scope;
  o["key"] = record.key;
  o["state"] = to_string(record.state);
  o["fence"] = record.fence;
  o["expires_at"] = rfc3339(record.expires_at);
  if (record.state == RecordState::pending && record.lease_until)
    o["lease_until"] = rfc3339(*record.lease_until);
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
            m["at"] = rfc3339(TimePoint(std::chrono::milliseconds(r->mark.at_ms)));
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
