#include "gateway/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstring>
#include <string>

namespace idem::gateway {
namespace ssl = boost::asio::ssl;

namespace {

constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

// ALPN: http/1.1 when the client offers it; else no protocol (the handshake goes on).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kHttp11, sizeof kHttp11, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// OpenSSL's words for the last error ("no such file", "key values mismatch").
std::string openssl_reason(const boost::system::error_code& ec) {
  const unsigned long e = ERR_peek_last_error();
  const char* reason = e ? ERR_reason_error_string(e) : nullptr;
  ERR_clear_error();
  if (reason) return reason;
  return ec.message();
}

}  // namespace

std::shared_ptr<ssl::context> listener_tls_context(const ListenerTls& tls, const std::string& source) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_alpn_select_cb(native, select_alpn, nullptr);
  ERR_clear_error();
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(tls.cert_file, ec);
  if (ec)
    throw ConfigError(source, tls.cert_line, "tls.cert_file",
                      "cannot load the certificate chain " + tls.cert_file + ": " + openssl_reason(ec));
  ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec)
    throw ConfigError(source, tls.key_line, "tls.key_file",
                      "cannot load the private key " + tls.key_file + " (or it does not belong to " +
                          tls.cert_file + "): " + openssl_reason(ec));
  if (SSL_CTX_check_private_key(native) != 1)
    throw ConfigError(
        source, tls.key_line, "tls.key_file",
        "the private key " + tls.key_file + " does not belong to the certificate " + tls.cert_file);
  return ctx;
}

}  // namespace idem::gateway
