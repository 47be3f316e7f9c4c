// The shared vectors (protocol/vectors/README.md): the store contract as data, run on every backend
// of tests/testutil/backends.h. Each vector runs on a fresh store; the Java engine runs the same
// files against the same servers. What cannot be written as data (tokens' randomness, churn
// between threads, the Asio face, stores' own limits) stays in contract_test.cpp.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "idem/clock.h"
#include "idem/store.h"
#include "testutil/backends.h"

#ifndef IDEM_VECTORS_DIR
#error "IDEM_VECTORS_DIR must name protocol/vectors"
#endif

namespace idem::testutil {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

struct Case {
  Backend backend;
  std::string file;  // the file's stem: "records"
  std::string name;  // the vector's name
  std::shared_ptr<const json::object> vector;
};

std::vector<Case> all_cases() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(IDEM_VECTORS_DIR))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (const Backend& b : {memory_backend(), sqlite_backend(), redis_backend(), redis_cluster_backend(),
                           postgres_backend(), mysql_backend()}) {
    for (const auto& path : files) {
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      const json::value doc = json::parse(text.str());
      for (const json::value& v : doc.at("vectors").as_array()) {
        auto vector = std::make_shared<const json::object>(v.as_object());
        out.push_back({b, path.stem().string(), json::value_to<std::string>(vector->at("name")), vector});
      }
    }
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.backend.name + "_" + info.param.file + "_" + info.param.name;
}

// ---- one vector's run -----------------------------------------------------------------------

// What the steps named with "as": fences, tokens, records.
struct Saved {
  std::map<std::string, Fence> fences;
  std::map<std::string, std::string> tokens;
  std::map<std::string, std::optional<Record>> records;
};

// The answer of one step, as the vectors name its parts.
struct Answer {
  std::string error;                            // "" when the call succeeded, else the StatusCode's name
  std::string outcome;                          // "acquired", "committed", ...
  std::map<std::string, std::int64_t> numbers;  // fence, previous_fence, expires_in_us, retry_after_us
  std::map<std::string, bool> flags;            // recovered
  std::optional<std::string> result;            // begin's replay
  std::optional<std::optional<Record>> record;  // get
  std::optional<std::vector<std::pair<std::string, std::string>>> records;  // list
  std::optional<std::string> token;                                         // issue_token
};

class Runner {
 public:
  Runner(Store& store, const json::object& vector, std::function<void(Duration)> advance)
      : store_(store), vector_(vector), advance_(std::move(advance)) {}

  void run() {
    for (const auto& [name, value] : vector_) {
      const std::string n(name);
      if (n != "name" && n != "clock" && n != "values" && n != "steps") {
        ADD_FAILURE() << "unknown member " << n << " of a vector";
        return;
      }
    }
    const auto& steps = vector_.at("steps").as_array();
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const json::object& step = steps[i].as_object();
      SCOPED_TRACE("step " + std::to_string(i + 1) + ": " + json::serialize(step).substr(0, 300));
      if (!known_members(step)) return;
      run_step(step);
      if (::testing::Test::HasFailure()) return;
    }
  }

 private:
  // A member no runner knows fails the vector, so that a new form cannot pass unseen.
  static bool known_members(const json::object& step) {
    static const std::map<std::string, std::set<std::string>> kArgs = {
        {"begin", {"scope", "key", "fingerprint", "lease_ms", "retention_ms", "owner"}},
        {"commit", {"scope", "key", "fence", "result", "retention_ms", "over_uncertain"}},
        {"release", {"scope", "key", "fence", "restore_token", "ttl_ms"}},
        {"abandon", {"scope", "key", "owner"}},
        {"extend", {"scope", "key", "fence", "lease_ms"}},
        {"get", {"scope", "key"}},
        {"remove", {"scope", "key"}},
        {"sweep", {}},
        {"list", {"key_prefix", "scope", "state", "limit", "cursor"}},
        {"issue_token", {"scope", "ttl_ms"}},
        {"consume_token", {"scope", "token"}},
        {"restore_token", {"scope", "token", "ttl_ms"}},
        {"lock", {"name", "owner", "ttl_ms"}},
        {"unlock", {"name", "owner"}},
        {"extend_lock", {"name", "owner", "ttl_ms"}},
        {"ping", {}},
        {"advance", {"ms"}},
        {"race", {"copies", "step", "owners"}},
    };
    const auto op = kArgs.find(std::string(step.at("op").as_string()));
    if (op == kArgs.end()) {
      ADD_FAILURE() << "unknown op " << step.at("op");
      return false;
    }
    for (const auto& [name, value] : step) {
      const std::string n(name);
      if (n == "op" || n == "as" || n == "expect" || n == "expect_by_store" || op->second.contains(n))
        continue;
      ADD_FAILURE() << "unknown member " << n << " of " << op->first;
      return false;
    }
    if (auto* inner = step.if_contains("step")) return known_members(inner->as_object());
    return true;
  }

  // ---- values ---------------------------------------------------------------------------------

  std::string bytes(const json::value& v) const {
    if (v.is_string()) return std::string(v.as_string());
    const json::object& o = v.as_object();
    if (auto* h = o.if_contains("hex")) {
      std::string hex(h->as_string()), out;
      for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      return out;
    }
    if (auto* c = o.if_contains("concat")) {
      std::string out;
      for (const json::value& part : c->as_array()) out += bytes(part);
      return out;
    }
    if (auto* c = o.if_contains("cycle")) {
      const std::string unit = bytes(*c);
      const auto length = static_cast<std::size_t>(o.at("length").to_number<std::int64_t>());
      std::string out;
      out.reserve(length);
      while (out.size() < length) out += unit.substr(0, length - out.size());
      return out;
    }
    if (o.contains("fence")) return std::to_string(fence(v));
    if (auto* t = o.if_contains("token")) return tokens_at(std::string(t->as_string()));
    if (auto* n = o.if_contains("value")) return bytes(vector_.at("values").at(n->as_string()));
    ADD_FAILURE() << "not a byte value: " << json::serialize(v);
    return {};
  }

  std::string tokens_at(const std::string& name) const {
    auto it = saved_.tokens.find(name);
    if (it == saved_.tokens.end()) ADD_FAILURE() << "no token saved as " << name;
    return it == saved_.tokens.end() ? std::string() : it->second;
  }

  Fence fence(const json::value& v) const {
    if (v.is_number()) return v.to_number<Fence>();
    const json::object& o = v.as_object();
    const std::string name(o.at("fence").as_string());
    auto it = saved_.fences.find(name);
    if (it == saved_.fences.end()) {
      ADD_FAILURE() << "no fence saved as " << name;
      return 0;
    }
    const std::int64_t plus = o.contains("plus") ? o.at("plus").to_number<std::int64_t>() : 0;
    return static_cast<Fence>(static_cast<std::int64_t>(it->second) + plus);
  }

  // An operand of a comparison: a number, a saved fence, or a field of a saved record.
  std::int64_t operand(const json::value& v) const {
    if (v.is_number()) return v.to_number<std::int64_t>();
    const json::object& o = v.as_object();
    if (o.contains("fence")) return static_cast<std::int64_t>(fence(v));
    const auto& rec = saved_.records.at(std::string(o.at("record").as_string()));
    if (!rec) {
      ADD_FAILURE() << "the record saved as " << o.at("record") << " is absent";
      return 0;
    }
    return record_number(*rec, std::string(o.at("field").as_string())).value_or(0);
  }

  static std::optional<std::int64_t> record_number(const Record& r, const std::string& field) {
    if (field == "fence") return static_cast<std::int64_t>(r.fence);
    if (field == "expires_at_us") return to_micros(r.expires_at);
    if (field == "lease_until_us") {
      if (!r.lease_until) return std::nullopt;
      return to_micros(*r.lease_until);
    }
    if (field == "lease_to_expiry_ms") {
      if (!r.lease_until) return std::nullopt;
      return (to_micros(r.expires_at) - to_micros(*r.lease_until)) / 1000;
    }
    ADD_FAILURE() << "no such record field: " << field;
    return std::nullopt;
  }

  static std::string record_bytes(const Record& r, const std::string& field) {
    if (field == "scope") return r.scope;
    if (field == "key") return r.key;
    if (field == "fingerprint") return r.fingerprint;
    if (field == "owner") return r.owner;
    if (field == "result") return r.result;
    ADD_FAILURE() << "no such record field: " << field;
    return {};
  }

  // A number against its expectation: a number or reference (equal), or {">": x, "<=": y, ...}.
  void check_number(const std::string& what, std::optional<std::int64_t> actual,
                    const json::value& want) const {
    if (want.is_null()) {
      EXPECT_FALSE(actual.has_value()) << what << " should be absent, is " << *actual;
      return;
    }
    if (!actual) {
      ADD_FAILURE() << what << " is absent";
      return;
    }
    if (want.is_number() || (want.is_object() && !is_comparison(want.as_object()))) {
      EXPECT_EQ(*actual, operand(want)) << what;
      return;
    }
    for (const auto& [op, v] : want.as_object()) {
      const std::int64_t x = operand(v);
      if (op == "=")
        EXPECT_EQ(*actual, x) << what;
      else if (op == "!=")
        EXPECT_NE(*actual, x) << what;
      else if (op == ">")
        EXPECT_GT(*actual, x) << what;
      else if (op == ">=")
        EXPECT_GE(*actual, x) << what;
      else if (op == "<")
        EXPECT_LT(*actual, x) << what;
      else if (op == "<=")
        EXPECT_LE(*actual, x) << what;
      else
        ADD_FAILURE() << "unknown comparison " << op;
    }
  }

  static bool is_comparison(const json::object& o) {
    for (const char* op : {"=", "!=", ">", ">=", "<", "<="})
      if (o.contains(op)) return true;
    return false;
  }

  void check_bytes(const std::string& what, const std::string& actual, const json::value& want) const {
    std::string expected;
    if (want.is_object() && want.as_object().contains("record")) {
      const auto& rec = saved_.records.at(std::string(want.at("record").as_string()));
      expected = rec ? record_bytes(*rec, std::string(want.at("field").as_string())) : std::string();
    } else {
      expected = bytes(want);
    }
    EXPECT_EQ(actual.size(), expected.size()) << what;
    EXPECT_TRUE(actual == expected) << what << ": "
                                    << (actual.size() > 200 ? actual.substr(0, 200) + "…" : actual);
  }

  // ---- arguments --------------------------------------------------------------------------------

  std::string arg_bytes(const json::object& step, const char* name, std::string fallback = "") const {
    auto* v = step.if_contains(name);
    return v ? bytes(*v) : fallback;
  }
  static Duration arg_ms(const json::object& step, const char* name) {
    auto* v = step.if_contains(name);
    return std::chrono::milliseconds(v ? v->to_number<std::int64_t>() : 60000);
  }

  // ---- running a step ---------------------------------------------------------------------------

  Answer call(const json::object& step) {
    const std::string op(step.at("op").as_string());
    const std::string scope = arg_bytes(step, "scope", "s"), key = arg_bytes(step, "key");
    Answer a;
    auto failed = [&](const Status& s) {
      a.error = to_string(s.code());
      return a;
    };
    if (op == "begin") {
      auto r = store_.begin({scope, key, arg_bytes(step, "fingerprint"), arg_ms(step, "lease_ms"),
                             arg_ms(step, "retention_ms"), arg_bytes(step, "owner")});
      if (!r) return failed(r.status());
      a.outcome = to_string(r->kind);
      a.numbers["fence"] = static_cast<std::int64_t>(r->fence);
      a.numbers["previous_fence"] = static_cast<std::int64_t>(r->previous_fence);
      a.flags["recovered"] = r->recovered;
      if (r->kind == BeginOutcome::Kind::replay) {
        a.result = r->result;
        a.numbers["expires_in_ms"] = r->expires_in.count() / 1000;
      }
      if (r->kind == BeginOutcome::Kind::in_progress)
        a.numbers["retry_after_ms"] = r->retry_after.count() / 1000;
    } else if (op == "commit") {
      auto r = store_.commit({scope, key, fence(step.at("fence")), arg_bytes(step, "result"),
                              arg_ms(step, "retention_ms"), arg_bytes(step, "over_uncertain")});
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "release") {
      ReleaseArgs args{scope, key, fence(step.at("fence"))};
      if (step.contains("restore_token"))
        args.restore_token = TokenRestore{arg_bytes(step, "restore_token"), arg_ms(step, "ttl_ms")};
      auto r = store_.release(std::move(args));
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "abandon") {
      auto r = store_.abandon({scope, key, arg_bytes(step, "owner")});
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "extend") {
      auto r = store_.extend({scope, key, fence(step.at("fence")), arg_ms(step, "lease_ms")});
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "get") {
      auto r = store_.get({scope, key});
      if (!r) return failed(r.status());
      a.outcome = *r ? "found" : "absent";
      a.record = *r;
    } else if (op == "remove") {
      auto r = store_.remove({scope, key});
      if (!r) return failed(r.status());
      a.outcome = *r ? "removed" : "absent";
    } else if (op == "sweep") {
      auto r = store_.sweep();
      if (!r) return failed(r.status());
      a.outcome = "ok";
    } else if (op == "list") {
      return list(step);
    } else if (op == "issue_token") {
      auto r = store_.issue_token({scope, arg_ms(step, "ttl_ms")});
      if (!r) return failed(r.status());
      a.outcome = "issued";
      a.token = *r;
    } else if (op == "consume_token") {
      auto r = store_.consume_token({scope, arg_bytes(step, "token")});
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "restore_token") {
      auto r = store_.restore_token({scope, arg_bytes(step, "token"), arg_ms(step, "ttl_ms")});
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "lock") {
      auto r = store_.lock({arg_bytes(step, "name"), arg_bytes(step, "owner"), arg_ms(step, "ttl_ms")});
      if (!r) return failed(r.status());
      a.outcome = to_string(r->kind);
      if (r->kind == LockOutcome::Kind::locked) a.numbers["fence"] = static_cast<std::int64_t>(r->fence);
      if (r->kind == LockOutcome::Kind::busy) a.numbers["retry_after_ms"] = r->retry_after.count() / 1000;
    } else if (op == "unlock") {
      auto r = store_.unlock({arg_bytes(step, "name"), arg_bytes(step, "owner")});
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "extend_lock") {
      auto r =
          store_.extend_lock({arg_bytes(step, "name"), arg_bytes(step, "owner"), arg_ms(step, "ttl_ms")});
      if (!r) return failed(r.status());
      a.outcome = to_string(*r);
    } else if (op == "ping") {
      auto r = store_.ping();
      if (!r) return failed(r.status());
      a.outcome = "ok";
    } else {
      ADD_FAILURE() << "unknown op " << op;
    }
    return a;
  }

  // Every page from the first (a given cursor: that page alone), each within the limit.
  Answer list(const json::object& step) {
    Answer a;
    ListArgs args;
    args.key_prefix = arg_bytes(step, "key_prefix");
    if (step.contains("scope")) args.scope = arg_bytes(step, "scope");
    if (auto* st = step.if_contains("state"))
      args.state = st->as_string() == "done" ? RecordState::done : RecordState::pending;
    if (auto* l = step.if_contains("limit")) args.limit = l->to_number<std::size_t>();
    const bool one_page = step.contains("cursor");
    args.cursor = arg_bytes(step, "cursor");
    a.records.emplace();
    for (int pages = 0; pages < 10000; ++pages) {
      auto page = store_.list(args);
      if (!page) {
        a.error = to_string(page.status().code());
        return a;
      }
      EXPECT_LE(page->records.size(), args.limit);
      for (const Record& r : page->records) a.records->emplace_back(r.scope, r.key);
      if (one_page || page->next_cursor.empty()) {
        a.outcome = "ok";
        return a;
      }
      args.cursor = page->next_cursor;
    }
    ADD_FAILURE() << "the listing did not end";
    return a;
  }

  void run_step(const json::object& step) {
    const std::string op(step.at("op").as_string());
    if (op == "advance") {
      advance_(std::chrono::milliseconds(step.at("ms").to_number<std::int64_t>()));
      return;
    }
    if (op == "race") return race(step);
    Answer a = call(step);
    const json::value* expect = step.if_contains("expect");
    if (auto* by_store = step.if_contains("expect_by_store")) {
      if (auto* mine = by_store->as_object().if_contains(store_.traits().name)) expect = mine;
    }
    check(a, expect ? &expect->as_object() : nullptr);
    if (auto* as = step.if_contains("as"); as && a.error.empty()) {
      const std::string name(as->as_string());
      if (a.numbers.contains("fence")) saved_.fences[name] = static_cast<Fence>(a.numbers["fence"]);
      if (a.token) saved_.tokens[name] = *a.token;
      if (a.record) saved_.records[name] = *a.record;
    }
  }

  void check(const Answer& a, const json::object* expect) const {
    if (expect == nullptr || !expect->contains("error")) {
      ASSERT_EQ(a.error, "") << "the call failed";
    }
    if (expect == nullptr) return;
    for (const auto& [name, want] : *expect) {
      if (name == "error") {
        EXPECT_EQ(a.error, want.as_string().c_str());
      } else if (name == "outcome") {
        EXPECT_EQ(a.outcome, want.as_string().c_str());
      } else if (name == "recovered") {
        EXPECT_EQ(a.flags.at("recovered"), want.as_bool());
      } else if (name == "result") {
        ASSERT_TRUE(a.result.has_value()) << "no result: " << a.outcome;
        check_bytes("result", *a.result, want);
      } else if (name == "record") {
        ASSERT_TRUE(a.record.has_value());
        check_record(*a.record, want);
      } else if (name == "records") {
        ASSERT_TRUE(a.records.has_value());
        std::multiset<std::pair<std::string, std::string>> got(a.records->begin(), a.records->end()), wanted;
        for (const json::value& r : want.as_array())
          wanted.emplace(bytes(r.as_array()[0]), bytes(r.as_array()[1]));
        EXPECT_EQ(got, wanted);
      } else {
        auto it = a.numbers.find(name);
        check_number(name, it == a.numbers.end() ? std::nullopt : std::optional(it->second), want);
      }
    }
  }

  void check_record(const std::optional<Record>& r, const json::value& want) const {
    if (want.is_null()) {
      EXPECT_FALSE(r.has_value()) << "the record should be absent";
      return;
    }
    ASSERT_TRUE(r.has_value()) << "the record is absent";
    for (const auto& [field, v] : want.as_object()) {
      const std::string f(field);
      if (f == "same_as") {
        const auto& saved = saved_.records.at(std::string(v.as_string()));
        EXPECT_TRUE(saved.has_value() && *saved == *r) << "the record changed since " << v;
      } else if (f == "state") {
        EXPECT_EQ(std::string(to_string(r->state)), std::string(v.as_string()));
      } else if (f == "fence" || f.ends_with("_us") || f.ends_with("_ms")) {
        check_number(f, record_number(*r, f), v);
      } else {
        check_bytes(f, record_bytes(*r, f), v);
      }
    }
  }

  // `copies` of one step at once from a start line; the outcomes counted.
  void race(const json::object& step) {
    const int copies = step.at("copies").to_number<int>();
    const bool distinct = step.contains("owners");
    std::vector<json::object> calls(copies, step.at("step").as_object());
    if (distinct)
      for (int i = 0; i < copies; ++i) calls[i]["owner"] = "owner-" + std::to_string(i);
    std::vector<Answer> answers(copies);
    std::latch start(copies);
    std::vector<std::thread> threads;
    for (int i = 0; i < copies; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        answers[i] = call(calls[i]);
      });
    }
    for (auto& t : threads) t.join();
    std::map<std::string, int> counts;
    for (const Answer& a : answers) ++counts[a.error.empty() ? a.outcome : a.error];
    std::map<std::string, int> wanted;
    for (const auto& [k, v] : step.at("expect").at("counts").as_object())
      wanted[std::string(k)] = v.to_number<int>();
    EXPECT_EQ(counts, wanted);
  }

  Store& store_;
  const json::object& vector_;
  std::function<void(Duration)> advance_;
  Saved saved_;
};

class StoreVectors : public ::testing::TestWithParam<Case> {};

TEST_P(StoreVectors, Run) {
  const Case& c = GetParam();
  auto clock = std::make_shared<ManualClock>();
  auto store = c.backend.open(clock);
  if (!store) GTEST_SKIP() << c.backend.name << ": no server configured (its IDEM_TEST_*_URL is not set)";
  const bool controlled = c.backend.controllable_clock;
  if (auto* needs = c.vector->if_contains("clock");
      needs && needs->as_string() == "controlled" && !controlled)
    GTEST_SKIP() << "the vector moves a clock " << c.backend.name << " does not let the runner control";
  Runner runner(*store, *c.vector, [&](Duration d) {
    if (controlled) {
      clock->advance(d);
    } else {
      std::this_thread::sleep_for(d);
    }
  });
  runner.run();
}

INSTANTIATE_TEST_SUITE_P(vectors, StoreVectors, ::testing::ValuesIn(all_cases()), case_name);

// The runner fails a vector whose expectation the store does not meet: each kind of expectation,
// written wrong on purpose, is reported (on the memory store).
void run_on_memory(const std::string& vector_json) {
  const json::object vector = json::parse(vector_json).as_object();
  auto clock = std::make_shared<ManualClock>();
  auto store = memory_backend().open(clock);
  Runner(*store, vector, [&](Duration d) { clock->advance(d); }).run();
}

TEST(StoreVectorRunner, ReportsEveryKindOfExpectationThatIsNotMet) {
  const std::string acquire = R"({"op": "begin", "key": "k", "as": "f"},)";
  const std::vector<std::string> wrong = {
      R"([{"op": "begin", "key": "k", "expect": {"outcome": "replay"}}])",
      R"([{"op": "begin", "key": "k", "expect": {"fence": {">": 9007199254740991}}}])",
      R"([{"op": "begin", "key": "k", "expect": {"recovered": true}}])",
      R"([{"op": "begin", "key": "k", "expect": {"error": "invalid_argument"}}])",
      R"([{"op": "begin", "key": "", "expect": {"outcome": "acquired"}}])",
      "[" + acquire + R"({"op": "begin", "key": "k", "expect": {"fence": {"fence": "f", "plus": 1}}}])",
      "[" + acquire + R"({"op": "begin", "key": "k", "expect": {"retry_after_ms": {">": 60000}}}])",
      "[" + acquire + R"({"op": "commit", "key": "k", "fence": {"fence": "f"}, "result": {"hex": "0001"}},
         {"op": "begin", "key": "k", "expect": {"result": {"hex": "0002"}}}])",
      "[" + acquire +
          R"({"op": "get", "key": "k", "as": "r"}, {"op": "advance", "ms": 5},
         {"op": "extend", "key": "k", "fence": {"fence": "f"}},
         {"op": "get", "key": "k", "expect": {"record": {"same_as": "r"}}}])",
      "[" + acquire + R"({"op": "get", "key": "k", "expect": {"record": {"owner": "someone"}}}])",
      "[" + acquire + R"({"op": "get", "key": "k", "expect": {"record": null}}])",
      "[" + acquire + R"({"op": "get", "key": "k", "expect": {"record": {"lease_until_us": null}}}])",
      "[" + acquire + R"({"op": "list", "expect": {"records": [["s", "k"], ["s", "other"]]}}])",
      R"([{"op": "race", "copies": 4, "step": {"op": "begin", "key": "k"}, "expect": {"counts": {"acquired": 2, "in_progress": 2}}}])",
      R"([{"op": "lock", "name": "n", "owner": "a"}, {"op": "lock", "name": "n", "owner": "b", "expect": {"outcome": "locked"}}])",
      R"([{"op": "begin", "key": "k", "fingerpint": "typo"}])",
      R"([{"op": "begin", "key": {"hexx": "00"}}])",
      R"([{"op": "begin", "key": "k", "expect": {"outcom": "acquired"}}])",
      R"([{"op": "issue_token", "as": "t"}, {"op": "consume_token", "token": {"token": "t"}},
          {"op": "consume_token", "token": {"token": "t"}, "expect": {"outcome": "consumed"}}])",
  };
  for (const std::string& steps : wrong) {
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter intercept(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &failures);
      run_on_memory(R"({"name": "wrong", "steps": )" + steps + "}");
    }
    EXPECT_GT(failures.size(), 0) << "not reported: " << steps;
  }
}

}  // namespace
}  // namespace idem::testutil
