// TLS on the client listener in-process (docs/operations.md, "TLS at the edge"): SIGHUP's
// reload swaps the certificate while clients on other threads handshake and send requests,
// so that ThreadSanitizer sees the swap race with the sessions that read it (scripts/test
// runs this binary under tsan). The behaviour itself is tested against the binary in
// tests/e2e/tls_listener_test.py.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>

#include "gateway/app/runtime.h"
#include "gateway/model/config/config.h"
#include "idem/open.h"
#include "testutil/temp_dir.h"
#include "testutil/test_certificates.h"

// libstdc++ 12's std::atomic<std::shared_ptr>::load (the running config's, Gateway::config)
// reads the pointer under its lock bit and then unlocks with memory_order_relaxed, so
// ThreadSanitizer sees that read race with the next reload's store (bits/shared_ptr_atomic.h;
// a formal race inside the library, not in the gateway). Only that is suppressed.
extern "C" const char* __tsan_default_suppressions() { return "race:std::_Sp_atomic\n"; }

namespace idem::gateway {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;

// A config whose client listener serves `cert` and `key`; its upstream refuses connections
// (each request is answered 502 by the gateway itself).
std::string config_with(const std::string& cert, const std::string& key) {
  return "listen: 127.0.0.1:0\nupstream: http://127.0.0.1:1\nstore: \"memory:\"\nadmin:\n  listen: "
         "127.0.0.1:0\ntls:\n  cert_file: " +
         cert + "\n  key_file: " + key + "\n";
}

// Handshakes (verifying against the test CA) and sends one request; the status line's code,
// or 0 when the handshake or the exchange failed.
int one_request(const tcp::endpoint& ep) {
  asio::io_context io;
  ssl::context ctx(ssl::context::tls_client);
  ctx.load_verify_file(testutil::certificates().file("ca.crt"));
  ctx.set_verify_mode(ssl::verify_peer);
  ssl::stream<tcp::socket> s(io, ctx);
  boost::system::error_code ec;
  s.next_layer().connect(ep, ec);
  if (!ec) s.handshake(ssl::stream_base::client, ec);
  if (ec) return 0;
  const std::string req = "GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  asio::write(s, asio::buffer(req), ec);
  std::string got;
  char buf[4096];
  for (;;) {
    const std::size_t n = s.read_some(asio::buffer(buf), ec);
    got.append(buf, n);
    if (ec) break;
  }
  return got.starts_with("HTTP/1.1 ") ? std::stoi(got.substr(9, 3)) : 0;
}

TEST(TlsReload, CertificatesSwappedWhileClientsHandshakeOnOtherThreads) {
  const auto& certs = testutil::certificates();
  ASSERT_TRUE(certs.ok()) << "openssl could not make the test certificates";
  testutil::TempDir dir;
  const std::string file = dir.file("idem.yaml");
  // Two files of the same pair, so that each reload loads a pair from other paths.
  std::filesystem::copy_file(certs.file("server.crt"), dir.file("copy.crt"));
  std::filesystem::copy_file(certs.file("server.key"), dir.file("copy.key"));
  std::ofstream(file) << config_with(certs.file("server.crt"), certs.file("server.key"));
  auto store = std::move(open_store("memory:")).value();
  RuntimeOptions options;
  options.threads = 2;
  options.config_file = file;
  Runtime runtime(load_config_file(file), *store, options);
  runtime.start();
  const tcp::endpoint ep = runtime.client_endpoint();

  std::atomic<bool> reloading{true};
  std::atomic<int> answered{0}, failed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 2; ++t)
    clients.emplace_back([&] {
      for (int i = 0; i < 15 || reloading.load(); ++i) (one_request(ep) == 502 ? answered : failed)++;
    });
  for (int i = 0; i < 20; ++i) {
    const bool copy = i % 2 == 0;
    std::ofstream(file) << config_with(copy ? dir.file("copy.crt") : certs.file("server.crt"),
                                       copy ? dir.file("copy.key") : certs.file("server.key"));
    EXPECT_TRUE(runtime.reload());
  }
  // A key of another certificate: refused, the running pair kept.
  std::ofstream(file) << config_with(certs.file("server.crt"), certs.file("client.key"));
  EXPECT_FALSE(runtime.reload());
  reloading = false;
  for (auto& c : clients) c.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GE(answered.load(), 30);
  EXPECT_EQ(one_request(ep), 502);
}

}  // namespace
}  // namespace idem::gateway
