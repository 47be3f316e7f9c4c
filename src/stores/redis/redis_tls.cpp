#include "stores/redis/redis_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

namespace idem::redis {

namespace ssl = boost::asio::ssl;

Result<std::shared_ptr<ssl::context>> make_tls_context(const Tls& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  auto fail = [&](const std::string& what) {
    return failed_precondition("redis TLS: " + what + ": " + ec.message());
  };
  if (ec) return fail("cannot set up TLS");
  if (tls.ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return fail("cannot read the system's CA certificates");
  } else {
    ctx->load_verify_file(tls.ca_file, ec);
    if (ec) return fail("cannot read the CA certificates of tls_ca=" + tls.ca_file);
  }
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (ec) return fail("cannot set up TLS");
  if (!tls.cert_file.empty()) {
    ctx->use_certificate_chain_file(tls.cert_file, ec);
    if (ec) return fail("cannot read the client certificate of tls_cert=" + tls.cert_file);
    ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
    if (ec) return fail("cannot read the client key of tls_key=" + tls.key_file);
  }
  return ctx;
}

Status prepare_tls_stream(ssl::stream<boost::asio::ip::tcp::socket>& stream, const Tls& tls,
                          const std::string& host) {
  const std::string& name = tls.server_name.empty() ? host : tls.server_name;
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  const bool ip = !ec;
  // RFC 6066: SNI carries host names, never addresses.
  if (!ip && !SSL_set_tlsext_host_name(stream.native_handle(), name.c_str())) {
    return failed_precondition("redis TLS: cannot send the server name '" + name + "'");
  }
  // OpenSSL checks the name itself, so that a mismatch is its verdict (tls_failure).
  const bool set =
      ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(stream.native_handle()), name.c_str()) == 1
         : SSL_set1_host(stream.native_handle(), name.c_str()) == 1;
  if (!set) return failed_precondition("redis TLS: cannot verify the server name '" + name + "'");
  return Status::ok();
}

bool tls_verify_failed(ssl::stream<boost::asio::ip::tcp::socket>& stream) {
  return SSL_get_verify_result(stream.native_handle()) != X509_V_OK;
}

std::string tls_failure(ssl::stream<boost::asio::ip::tcp::socket>& stream,
                        const boost::system::error_code& ec) {
  const long verdict = SSL_get_verify_result(stream.native_handle());
  if (verdict != X509_V_OK) {
    return std::string("the server's certificate was refused: ") + X509_verify_cert_error_string(verdict);
  }
  return ec.message();
}

}  // namespace idem::redis
