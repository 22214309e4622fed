#include "actors/cluster/tls_material.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string>

namespace parex {

namespace {

std::string SslErrors() {
  std::string text;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    text += (text.empty() ? "" : "; ") + std::string(buf);
  }
  return text.empty() ? "no detail from OpenSSL" : text;
}

}  // namespace

Status CheckTlsMaterial(const Topology& t) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (ctx == nullptr)
    return Internal("tls: OpenSSL cannot make a context: " + SslErrors());
  Status s;
  const std::string at = t.path + ": tls: ";
  if (SSL_CTX_use_certificate_chain_file(ctx, t.tls_cert.c_str()) != 1) {
    s = InvalidArgument(at + "cert " + t.tls_cert +
                        " is not a certificate chain: " + SslErrors());
  } else if (SSL_CTX_use_PrivateKey_file(ctx, t.tls_key.c_str(),
                                         SSL_FILETYPE_PEM) != 1) {
    s = InvalidArgument(at + "key " + t.tls_key +
                        " is not a private key or does not match cert " +
                        t.tls_cert + ": " + SslErrors());
  } else if (SSL_CTX_check_private_key(ctx) != 1) {
    s = InvalidArgument(at + "key " + t.tls_key + " does not match cert " +
                        t.tls_cert + ": " + SslErrors());
  } else if (SSL_CTX_load_verify_locations(ctx, t.tls_ca.c_str(), nullptr) !=
             1) {
    s = InvalidArgument(at + "ca " + t.tls_ca +
                        " holds no CA certificate: " + SslErrors());
  }
  SSL_CTX_free(ctx);
  return s;
}

}  // namespace parex
