// A request body's memory is taken from its budgets as its bytes arrive (http_body.h,
// BudgetedBody; docs/gateway.md, "Connections and bodies"): a declared length reserves
// nothing by itself, a body holds at most twice what has arrived (or its first 16 KiB) and
// never more than its length, and a growth past a budget fails the read.
#include <string>

#include <gtest/gtest.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include "gateway/http/http_body.h"

namespace idem::gateway {
namespace {

namespace http = boost::beast::http;

struct Read {
  BodyBudget listener{64u << 20};
  BodyBudget client;
  BodyReservation reservation{listener, &client};
  http::request_parser<BudgetedBody> parser;
  explicit Read(std::uint64_t client_budget, std::uint64_t limit = 1u << 20) : client(client_budget) {
    parser.body_limit(limit);
    parser.get().body().reservation = &reservation;
    parser.get().body().limit = limit;
  }
  boost::system::error_code put(const std::string& bytes) {
    boost::system::error_code ec;
    std::size_t at = 0;
    while (at < bytes.size() && !parser.is_done()) {
      const std::size_t n = parser.put(boost::asio::buffer(bytes.data() + at, bytes.size() - at), ec);
      if (ec == http::error::need_more) ec = {};
      if (ec || n == 0) break;
      at += n;
    }
    return ec;
  }
};

TEST(BudgetedBody, MemoryIsTakenAsTheBytesArriveNeverFromTheDeclaredLength) {
  Read r(32u << 20);
  ASSERT_FALSE(r.put("POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n"));
  EXPECT_EQ(r.reservation.held(), 0u) << "a declared length alone holds nothing";
  std::string sent;
  for (const std::size_t part : {100u, 20000u, 100000u, 500000u}) {
    ASSERT_FALSE(r.put(std::string(part, 'a'))) << sent.size();
    sent.append(part, 'a');
    EXPECT_LE(r.reservation.held(), std::max<std::size_t>(16 * 1024, 2 * sent.size())) << sent.size();
    EXPECT_GE(r.reservation.held(), sent.size());
    EXPECT_EQ(r.client.used(), r.reservation.held());
    EXPECT_EQ(r.listener.used(), r.reservation.held());
  }
  ASSERT_FALSE(r.put(std::string(1048576 - sent.size(), 'a')));
  ASSERT_TRUE(r.parser.is_done());
  EXPECT_EQ(r.parser.get().body().data, std::string(1048576, 'a'));
  EXPECT_EQ(r.reservation.held(), 1048576u) << "never more than its Content-Length";
}

TEST(BudgetedBody, AChunkSizeReservesNothingByItself) {
  Read r(32u << 20);
  ASSERT_FALSE(r.put("POST /orders HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffff\r\n"));
  EXPECT_EQ(r.reservation.held(), 0u);
  ASSERT_FALSE(r.put("0123456789"));
  EXPECT_EQ(r.reservation.held(), 16u * 1024) << "the first piece";
}

TEST(BudgetedBody, AGrowthPastTheClientsBudgetFailsTheReadAndHoldsNoMore) {
  {
    Read r(20 * 1024);
    ASSERT_FALSE(r.put("POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"));
    ASSERT_FALSE(r.put(std::string(10000, 'a')));
    EXPECT_EQ(r.reservation.held(), 16u * 1024);
    EXPECT_TRUE(r.put(std::string(10000, 'a')));
    EXPECT_TRUE(r.parser.get().body().overloaded);
    EXPECT_EQ(r.reservation.held(), 16u * 1024);
    EXPECT_EQ(r.listener.used(), 16u * 1024);
  }
  // Given back when the request ends (the budgets outlive it in the listener).
  BodyBudget listener(1u << 20), client(1u << 20);
  {
    BodyReservation held(listener, &client);
    ASSERT_TRUE(held.take(1000));
    EXPECT_FALSE(held.take(1u << 20)) << "past both";
    EXPECT_EQ(listener.used(), 1000u);
    EXPECT_EQ(client.used(), 1000u);
  }
  EXPECT_EQ(listener.used(), 0u);
  EXPECT_EQ(client.used(), 0u);
}

}  // namespace
}  // namespace idem::gateway
