// The request log (docs/observability.md): one JSON line per protected request, gathered
// in a buffer and written in batches.
#include <charconv>
#include <chrono>
#include <cstdio>

#include "gateway/model/request_meta.h"
#include "gateway/model/request_view.h"
#include "gateway/pipeline/gateway.h"
#include "util/rfc3339.h"

namespace idem::gateway {
namespace {

// The most of each client-chosen value a log line holds (docs/observability.md).
constexpr std::size_t kLoggedMethod = 32;
constexpr std::size_t kLoggedPath = 1024;
constexpr std::size_t kLoggedClient = 64;

}  // namespace

void Gateway::log(const Route& route, const Identity* id, std::string_view method, std::string_view target,
                  const RequestMeta& meta, std::string_view outcome, unsigned status, Duration latency) {
  // Written by hand into the batch: boost::json's object cost more than the rest of a
  // replay. A route name is [A-Za-z0-9._-] (config checks it), an outcome one of ours, and
  // the key hash hex: they need no escaping. The method, path and request id are the
  // client's: escaped and bounded (append_json_string), so any bytes still make one line
  // of valid JSON.
  std::string key_hash;
  if (id && !id->key.empty()) key_hash = key_hasher_(id->scope, id->record_key);
  char numbers[64];
  char* p = numbers;
  p = std::to_chars(p, numbers + 20, status).ptr;
  const std::size_t status_end = static_cast<std::size_t>(p - numbers);
  p = std::to_chars(p, numbers + sizeof numbers, static_cast<long long>(latency.count())).ptr;
  const std::string_view digits(numbers, static_cast<std::size_t>(p - numbers));
  const auto now = std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
  std::lock_guard lock(log_mu_);
  std::string& b = log_buffer_;
  b.append(R"({"time":")");
  util::append_rfc3339(b, now, util::SubSecond::milliseconds);
  b.append(R"(","route":")").append(route.name).append(R"(","method":)");
  append_json_string(b, method, kLoggedMethod);
  b.append(R"(,"path":)");
  append_json_string(b, target_path(target), kLoggedPath);
  b.append(R"(,"outcome":")").append(outcome);
  b.append(R"(","status":)").append(digits.substr(0, status_end));
  b.append(R"(,"latency_us":)").append(digits.substr(status_end));
  b.append(R"(,"request_id":)");
  append_json_string(b, meta.request_id.view(), kMaxRequestIdLength);
  b.append(R"(,"client":)");
  append_json_string(b, meta.origin(), kLoggedClient);
  if (!key_hash.empty()) b.append(R"(,"key_hash":")").append(key_hash).append("\"");
  b.append("}\n");
  if (b.size() >= 16 * 1024) write_log_locked();
}

void Gateway::flush_log() {
  std::lock_guard lock(log_mu_);
  write_log_locked();
}

void Gateway::write_log_locked() {
  if (log_buffer_.empty()) return;
  std::fwrite(log_buffer_.data(), 1, log_buffer_.size(), stdout);
  std::fflush(stdout);
  log_buffer_.clear();
}

}  // namespace idem::gateway
