// Checked arithmetic for element counts and byte sizes. Every size that comes
// from outside (a file's shape entries, a tensor record's dims, an attribute,
// shape inference over them) goes through these helpers, so a crafted value
// cannot wrap a product past the "enough bytes?" tests that follow it.
//
// The bounds are parex's own, not the machine's: no tensor has more than
// kMaxNumel elements (2^48) or more than kMaxTensorBytes bytes (2^50, 1 PiB).
// Anything larger is refused before any memory is asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/status.h"

namespace parex {

inline constexpr int64_t kMaxNumel = int64_t{1} << 48;
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 50;
// The largest rank a tensor may have (Paddle's DDim holds 9).
inline constexpr size_t kMaxRank = 9;

// a * b, false when it overflows int64_t.
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool CheckedMul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool CheckedAdd(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// The element count of `dims`, each extent >= 0, at most kMaxRank extents and
// a product of at most kMaxNumel; OutOfRange naming `what` otherwise.
StatusOr<int64_t> CheckedNumel(const std::vector<int64_t>& dims,
                               const std::string& what);

// numel * element_size, at most kMaxTensorBytes; OutOfRange naming `what`.
StatusOr<uint64_t> CheckedBytes(int64_t numel, size_t element_size,
                                const std::string& what);

}  // namespace parex
