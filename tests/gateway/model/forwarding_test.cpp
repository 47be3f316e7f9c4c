// Whom the gateway believes about where a request came from (forwarding.h): addresses,
// ranges, trusted proxies, the client behind them, and the forwarding fields by name.
#include "gateway/model/forwarding.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

using Views = std::vector<std::string_view>;

TrustedProxies trusting(std::initializer_list<const char*> ranges) {
  std::vector<IpRange> out;
  for (const char* r : ranges) out.push_back(*parse_ip_range(r));
  return TrustedProxies(std::move(out));
}

TEST(IpAddress, ParsesIpv4AndIpv6AndWritesThemBack) {
  for (const char* text : {"192.0.2.7", "0.0.0.0", "255.255.255.255", "::1", "2001:db8::1", "::"}) {
    auto a = parse_ip(text);
    ASSERT_TRUE(a) << text;
    EXPECT_EQ(to_string(*a), text);
  }
  EXPECT_TRUE(parse_ip("192.0.2.7")->v4);
  EXPECT_FALSE(parse_ip("2001:db8::1")->v4);
  // An IPv4 client of an IPv6 socket is the IPv4 client.
  EXPECT_EQ(parse_ip("::ffff:192.0.2.7"), parse_ip("192.0.2.7"));
  EXPECT_EQ(to_string(*parse_ip("2001:DB8:0:0:0:0:0:1")), "2001:db8::1");
  for (const char* bad : {"", "unknown", "localhost", "192.0.2", "192.0.2.256", "01.2.3.4", "1.2.3.4 ",
                          "[::1]", "1.2.3.4:80", "fe80::1%eth0", "::1::2", "_hidden", "1.2.3.4/8"})
    EXPECT_FALSE(parse_ip(bad)) << bad;
}

// X-Forwarded-For entries as proxies write them: ports, brackets, spaces.
TEST(IpAddress, LenientlyAsForwardedForEntriesComeWithPortsAndBrackets) {
  EXPECT_EQ(parse_ip(" 192.0.2.7\t", true), parse_ip("192.0.2.7"));
  EXPECT_EQ(parse_ip("192.0.2.7:51234", true), parse_ip("192.0.2.7"));
  EXPECT_EQ(parse_ip("[2001:db8::1]", true), parse_ip("2001:db8::1"));
  EXPECT_EQ(parse_ip("[2001:db8::1]:443", true), parse_ip("2001:db8::1"));
  EXPECT_EQ(parse_ip("2001:db8::1", true), parse_ip("2001:db8::1"));
  for (const char* bad : {"unknown", "192.0.2.7:", "192.0.2.7:x", "[2001:db8::1", "[2001:db8::1]x",
                          "[2001:db8::1]:", "_obfuscated", "\"[2001:db8::1]\""})
    EXPECT_FALSE(parse_ip(bad, true)) << bad;
}

TEST(IpRange, AddressesAndCidrsOfBothFamilies) {
  auto r8 = parse_ip_range("10.0.0.0/8");
  ASSERT_TRUE(r8);
  EXPECT_TRUE(r8->contains(*parse_ip("10.255.1.2")));
  EXPECT_TRUE(r8->contains(*parse_ip("::ffff:10.1.2.3")));
  EXPECT_FALSE(r8->contains(*parse_ip("11.0.0.1")));
  EXPECT_FALSE(r8->contains(*parse_ip("::a00:1"))) << "an IPv6 address that is not IPv4-mapped";

  auto r20 = parse_ip_range("172.16.0.0/12");
  EXPECT_TRUE(r20->contains(*parse_ip("172.31.255.255")));
  EXPECT_FALSE(r20->contains(*parse_ip("172.32.0.0")));

  auto one = parse_ip_range("192.0.2.7");
  EXPECT_TRUE(one->contains(*parse_ip("192.0.2.7")));
  EXPECT_FALSE(one->contains(*parse_ip("192.0.2.8")));

  auto v6 = parse_ip_range("2001:db8::/32");
  EXPECT_TRUE(v6->contains(*parse_ip("2001:db8:ffff::1")));
  EXPECT_FALSE(v6->contains(*parse_ip("2001:db9::1")));
  EXPECT_FALSE(v6->contains(*parse_ip("10.0.0.1")));

  auto all4 = parse_ip_range("0.0.0.0/0");
  EXPECT_TRUE(all4->contains(*parse_ip("203.0.113.9")));
  EXPECT_FALSE(all4->contains(*parse_ip("2001:db8::1"))) << "0.0.0.0/0 is every IPv4 address only";
  EXPECT_TRUE(parse_ip_range("::/0")->contains(*parse_ip("2001:db8::1")));
  EXPECT_TRUE(parse_ip_range("::1/128")->contains(*parse_ip("::1")));
}

TEST(IpRange, RefusesWhatCannotBeMeant) {
  EXPECT_EQ(parse_ip_range("10.0.0.1/8").status().message(),
            "'10.0.0.1/8' has address bits set past its /8 prefix (the range is 10.0.0.0/8)");
  EXPECT_EQ(parse_ip_range("10.0.0.0/33").status().message(),
            "'10.0.0.0/33': the prefix length must be a number from 0 to 32");
  EXPECT_EQ(parse_ip_range("2001:db8::/129").status().message(),
            "'2001:db8::/129': the prefix length must be a number from 0 to 128");
  EXPECT_EQ(parse_ip_range("proxy.internal").status().message(),
            "'proxy.internal' is not an IPv4 or IPv6 address");
  for (const char* bad : {"10.0.0.0/", "10.0.0.0/x", "10.0.0.0/-1", "10.0.0.0/8/8", "/8", "10.0.0.0/ 8"})
    EXPECT_FALSE(parse_ip_range(bad)) << bad;
}

TEST(TrustedProxies, NoneByDefault) {
  TrustedProxies none;
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.contains("127.0.0.1"));
  const TrustedProxies t = trusting({"127.0.0.1", "10.0.0.0/8", "fd00::/8"});
  EXPECT_TRUE(t.contains("127.0.0.1"));
  EXPECT_TRUE(t.contains("10.9.8.7"));
  EXPECT_TRUE(t.contains("fd12::1"));
  EXPECT_FALSE(t.contains("127.0.0.2"));
  EXPECT_FALSE(t.contains("unknown"));
  EXPECT_FALSE(t.contains(""));
}

// nginx's real_ip_recursive: from the right, the first address no trusted proxy holds.
TEST(ResolveClient, TheFirstUntrustedAddressFromTheRight) {
  const TrustedProxies t = trusting({"10.0.0.0/8"});
  EXPECT_EQ(resolve_client("203.0.113.9", Views{"1.2.3.4"}, t), "203.0.113.9")
      << "an untrusted peer is the client";
  EXPECT_EQ(resolve_client("10.0.0.1", Views{}, t), "10.0.0.1") << "no entries: the proxy itself";
  EXPECT_EQ(resolve_client("10.0.0.1", Views{"198.51.100.1"}, t), "198.51.100.1");
  // A client's own spoofed entries sit left of what the trusted proxies added.
  EXPECT_EQ(resolve_client("10.0.0.1", Views{"6.6.6.6, 198.51.100.1, 10.0.0.2"}, t), "198.51.100.1");
  EXPECT_EQ(resolve_client("10.0.0.1", Views{"6.6.6.6", "198.51.100.1", "10.0.0.2"}, t), "198.51.100.1")
      << "several fields are one list";
  EXPECT_EQ(resolve_client("10.0.0.1", Views{"10.0.0.3, 10.0.0.2"}, t), "10.0.0.3") << "every entry trusted";
  EXPECT_EQ(resolve_client("10.0.0.1", Views{"garbage, 10.0.0.2"}, t), "10.0.0.2")
      << "not an address: the last one the trusted chain vouches for";
  EXPECT_EQ(resolve_client("10.0.0.1", Views{"garbage"}, t), "10.0.0.1");
  EXPECT_EQ(resolve_client("10.0.0.1", Views{"[2001:db8::7]:443, 10.0.0.2:80"}, t), "2001:db8::7");
  EXPECT_EQ(resolve_client("10.0.0.1", Views{" , 198.51.100.1 ,"}, t), "198.51.100.1")
      << "empty entries skipped";
}

TEST(ForwardingField, EveryForwardingFieldInAnyCase) {
  EXPECT_EQ(forwarding_field("Forwarded"), ForwardingField::forwarded);
  EXPECT_EQ(forwarding_field("FORWARDED"), ForwardingField::forwarded);
  EXPECT_EQ(forwarding_field("x-forwarded-for"), ForwardingField::forwarded_for);
  EXPECT_EQ(forwarding_field("X-Forwarded-Proto"), ForwardingField::forwarded_proto);
  for (const char* other : {"X-Forwarded-Host", "x-forwarded-port", "X-Forwarded-Prefix", "X-FORWARDED-SSL",
                            "X-Forwarded-Scheme", "X-Forwarded-Server", "X-Forwarded-Protocol", "X-Real-IP",
                            "X-Client-IP", "True-Client-IP", "X-Url-Scheme", "X-Scheme", "Front-End-Https"})
    EXPECT_EQ(forwarding_field(other), ForwardingField::other) << other;
  for (const char* none : {"", "Host", "X-Forwarded", "Forwarded-For", "X-Request-Id", "traceparent",
                           "X-Forwarded-Hosts", "Content-Type"})
    EXPECT_EQ(forwarding_field(none), ForwardingField::none) << none;
}

TEST(ForwardedElement, RfcSevenTwoThreeNineNodes) {
  EXPECT_EQ(forwarded_element("192.0.2.7"), "for=192.0.2.7;proto=http");
  EXPECT_EQ(forwarded_element("::ffff:192.0.2.7"), "for=192.0.2.7;proto=http");
  EXPECT_EQ(forwarded_element("2001:db8::1"), "for=\"[2001:db8::1]\";proto=http");
  EXPECT_EQ(forwarded_element("unknown"), "for=unknown;proto=http");
}

// Over the TLS listener this hop says https: X-Forwarded-Proto unless a trusted proxy sent
// its client's protocol, and this hop's Forwarded element (the last) always.
TEST(ForwardedOverTls, ThisHopSaysHttps) {
  std::string head =
      "POST /orders HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n"
      "Forwarded: for=203.0.113.7;proto=http, for=192.0.2.7;proto=http\r\nX-Request-Id: r\r\n\r\n";
  std::string kept = head;
  forwarded_over_tls(head, false);
  EXPECT_EQ(head,
            "POST /orders HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: https\r\n"
            "Forwarded: for=203.0.113.7;proto=http, for=192.0.2.7;proto=https\r\nX-Request-Id: r\r\n\r\n");
  forwarded_over_tls(kept, true);  // the proxy's "http" stays
  EXPECT_NE(kept.find("X-Forwarded-Proto: http\r\n"), std::string::npos);
  EXPECT_NE(kept.find("for=192.0.2.7;proto=https\r\n"), std::string::npos);
  EXPECT_EQ(forwarded_value_over_tls("for=192.0.2.7;proto=http"), "for=192.0.2.7;proto=https");
  EXPECT_EQ(forwarded_value_over_tls("for=192.0.2.7;proto=https"), "for=192.0.2.7;proto=https");
}

}  // namespace
}  // namespace idem::gateway
