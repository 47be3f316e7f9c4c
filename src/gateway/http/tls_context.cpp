#include "gateway/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <cerrno>

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

// Why `file` could not be loaded: the system's words when it cannot be read ("No such file
// or directory"), else OpenSSL's ("key values mismatch", "no start line").
std::string reason(const std::string& file, const boost::system::error_code& ec) {
  ERR_clear_error();
  if (::access(file.c_str(), R_OK) != 0) return std::strerror(errno);
  std::string why = ec.message();
  if (const auto paren = why.find(" ("); paren != std::string::npos) why.resize(paren);  // "(x509 ...)"
  return why;
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
    throw ConfigError(
        source, tls.cert_line, "tls.cert_file",
        "cannot load the certificate chain " + tls.cert_file + ": " + reason(tls.cert_file, ec));
  ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec)
    throw ConfigError(source, tls.key_line, "tls.key_file",
                      "cannot load the private key " + tls.key_file + " (or it does not belong to " +
                          tls.cert_file + "): " + reason(tls.key_file, ec));
  if (SSL_CTX_check_private_key(native) != 1)
    throw ConfigError(
        source, tls.key_line, "tls.key_file",
        "the private key " + tls.key_file + " does not belong to the certificate " + tls.cert_file);
  return ctx;
}

}  // namespace idem::gateway
