// Listing records for operators (docs/admin.md, "Listing records"): the query, the
// uncertain filter and the paging of one answer, without a store.
#include "gateway/admin/record_list.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "gateway/admin/record_json.h"
#include "gateway/model/stored_result.h"

namespace idem::gateway {
namespace {

TEST(RecordList, QueryParameters) {
  auto all = parse_list_query("");
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(all->args.key_prefix, "");
  EXPECT_FALSE(all->args.scope.has_value());
  EXPECT_FALSE(all->args.state.has_value());
  EXPECT_EQ(all->args.limit, kDefaultListLimit);
  EXPECT_FALSE(all->uncertain);

  auto q = parse_list_query("key_space=orders&state=done&uncertain=true&scope=&limit=7&cursor=k00");
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  EXPECT_EQ(q->args.key_prefix, "orders:");
  EXPECT_EQ(q->args.scope, std::optional<std::string>(""));  // scope= is the empty scope
  EXPECT_EQ(q->args.state, RecordState::done);
  EXPECT_EQ(q->args.limit, 7u);
  EXPECT_EQ(q->args.cursor, "k00");
  EXPECT_TRUE(q->uncertain);
  EXPECT_EQ(parse_list_query("scope=a%2Fb")->args.scope, std::optional<std::string>("a/b"));
  EXPECT_EQ(parse_list_query("limit=1000")->args.limit, 1000u);
  EXPECT_FALSE(parse_list_query("uncertain=false")->uncertain);

  for (const char* bad :
       {"key_space=", "key_space=a:b", "state=", "state=gone", "uncertain=yes", "uncertain=", "limit=0",
        "limit=1001", "limit=", "limit=ten", "limit=-1", "limit=5x", "state=pending&uncertain=true"}) {
    auto r = parse_list_query(bad);
    EXPECT_EQ(r.status().code(), StatusCode::invalid_argument) << bad;
  }
}

Record done(std::string key, StoredResult::Kind kind) {
  StoredResult s;
  s.kind = kind;
  return {"", std::move(key), RecordState::done, 1, "", std::nullopt, from_micros(1), encode(s)};
}

TEST(RecordList, UncertainKeepsDoneRecordsHoldingTheMarker) {
  EXPECT_TRUE(is_uncertain(done("a", StoredResult::Kind::uncertain)));
  EXPECT_FALSE(is_uncertain(done("b", StoredResult::Kind::json)));
  Record pending = done("c", StoredResult::Kind::uncertain);
  pending.state = RecordState::pending;
  EXPECT_FALSE(is_uncertain(pending));
}

TEST(RecordList, CollectorAsksForWhatIsMissingUntilTheEnd) {
  ListRequest r;
  r.args.limit = 3;
  r.uncertain = true;
  ListCollector c(std::move(r));
  auto first = c.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->limit, 3u);
  EXPECT_EQ(first->state, RecordState::done);  // uncertain records are done ones
  EXPECT_EQ(first->cursor, "");
  c.add({{done("u1", StoredResult::Kind::uncertain), done("j1", StoredResult::Kind::json),
          done("u2", StoredResult::Kind::uncertain)},
         "c1"});
  auto second = c.next();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->limit, 1u);
  EXPECT_EQ(second->cursor, "c1");
  c.add({{done("j2", StoredResult::Kind::json)}, "c2"});
  c.add({{done("u3", StoredResult::Kind::uncertain)}, "c3"});
  EXPECT_FALSE(c.next().has_value());  // full
  auto o = boost::json::parse(c.json()).as_object();
  ASSERT_EQ(o.at("records").as_array().size(), 3u);
  EXPECT_EQ(o.at("records").as_array()[0],
            boost::json::parse(record_json(done("u1", StoredResult::Kind::uncertain))));
  EXPECT_EQ(o.at("records").as_array()[2].as_object().at("key").as_string(), "u3");
  EXPECT_EQ(o.at("next_cursor").as_string(), "c3");
}

TEST(RecordList, CollectorEndsWithAnEmptyCursorOrAfterBoundedCalls) {
  ListCollector end(ListRequest{});
  end.add({{done("a", StoredResult::Kind::json)}, ""});
  EXPECT_FALSE(end.next().has_value());
  EXPECT_EQ(boost::json::parse(end.json()).as_object().at("next_cursor").as_string(), "");

  ListRequest r;
  r.uncertain = true;
  ListCollector sparse(std::move(r));
  int calls = 0;
  while (sparse.next()) {
    sparse.add({{done("j", StoredResult::Kind::json)}, "more"});
    ++calls;
  }
  EXPECT_EQ(calls, ListCollector::kMaxStoreCalls);
  auto o = boost::json::parse(sparse.json()).as_object();
  EXPECT_TRUE(o.at("records").as_array().empty());
  EXPECT_EQ(o.at("next_cursor").as_string(), "more");  // a short answer, and the listing goes on
}

}  // namespace
}  // namespace idem::gateway
