// Digests for fingerprints and the cluster handshake (OpenSSL's libcrypto):
// SHA-256 of bytes, HMAC-SHA-256 under a key, a constant-time comparison and
// random bytes from the operating system's generator.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace parex {

// 32 raw bytes.
std::string Sha256(std::string_view data);
// 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);
std::string HexEncode(std::string_view bytes);

// HMAC-SHA-256(key, data): 32 raw bytes.
std::string HmacSha256(std::string_view key, std::string_view data);

// Equal sizes and bytes, in time independent of where they differ.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

// `n` bytes from a cryptographic generator; Internal when it fails.
StatusOr<std::string> RandomBytes(size_t n);

}  // namespace parex
