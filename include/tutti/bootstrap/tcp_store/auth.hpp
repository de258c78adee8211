//! @file auth.hpp  tcp_store's mutual challenge-response: HMAC-SHA256 over fresh nonces, from OpenSSL's libcrypto.
//!
//!   server -> client  challenge: Ns (32 random bytes, fresh per connection)
//!   client -> server  response:  HMAC(key, "tutti-store-v1" || Ns || Nc), Nc (32 random bytes)
//!   server -> client  proof:     HMAC(key, "tutti-store-v1 server" || Nc || Ns)
//! Each side compares with CRYPTO_memcmp (constant time). Different labels for the two directions,
//! so a server's proof can never be replayed as a client's response.
#pragma once
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string_view>

#include "tutti/bootstrap/job_key.hpp"
#include "tutti/bootstrap/tcp_store/messages.hpp"
#include "tutti/core/error.hpp"

namespace tutti::bootstrap::tcp_auth {

inline constexpr std::string_view client_label = "tutti-store-v1";
inline constexpr std::string_view server_label = "tutti-store-v1 server";

//! 32 bytes from OpenSSL's CSPRNG; a transport_error if it has no entropy.
[[nodiscard]] inline tcp_wire::nonce fresh_nonce() {
  tcp_wire::nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1)
    throw transport_error("tcp_store: OpenSSL RAND_bytes could not produce a nonce");
  return n;
}

//! HMAC-SHA256(key, label || a || b).
[[nodiscard]] inline tcp_wire::mac hmac(const job_key& key, std::string_view label, const tcp_wire::nonce& a,
                                        const tcp_wire::nonce& b) {
  unsigned char message[64 + 2 * tcp_wire::nonce_bytes];
  static_assert(sizeof message >= server_label.size() + 2 * tcp_wire::nonce_bytes);
  std::size_t n = 0;
  for (char c : label) message[n++] = static_cast<unsigned char>(c);
  for (auto x : a) message[n++] = x;
  for (auto x : b) message[n++] = x;
  tcp_wire::mac out{};
  unsigned int out_len = 0;
  const auto k = key.bytes();
  if (HMAC(EVP_sha256(), k.data(), static_cast<int>(k.size()), message, n, out.data(), &out_len) == nullptr ||
      out_len != out.size())
    throw transport_error("tcp_store: OpenSSL HMAC-SHA256 failed");
  return out;
}

[[nodiscard]] inline tcp_wire::mac client_mac(const job_key& key, const tcp_wire::nonce& server_nonce,
                                              const tcp_wire::nonce& client_nonce) {
  return hmac(key, client_label, server_nonce, client_nonce);
}

[[nodiscard]] inline tcp_wire::mac server_mac(const job_key& key, const tcp_wire::nonce& server_nonce,
                                              const tcp_wire::nonce& client_nonce) {
  return hmac(key, server_label, client_nonce, server_nonce);
}

//! Constant-time comparison (no early exit that would time the first differing byte).
[[nodiscard]] inline bool same_mac(const tcp_wire::mac& a, const tcp_wire::mac& b) noexcept {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace tutti::bootstrap::tcp_auth
