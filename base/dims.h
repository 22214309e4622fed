// Dims: the shape of a tensor or variable. -1 marks an unknown extent (the
// batch dimension of a program variable); runtime tensors have none.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

namespace parex {

using Dims = std::vector<int64_t>;

// Product of the extents; -1 if any extent is unknown. A product that would
// overflow saturates at INT64_MAX (kNumelOverflow), which no allocation
// accepts: sizes from files and attributes are checked with CheckedNumel
// (base/checked_math.h) where they enter, this is the backstop.
inline constexpr int64_t kNumelOverflow = INT64_MAX;
inline int64_t Numel(const Dims& dims) {
  int64_t n = 1;
  bool overflow = false, zero = false;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    zero = zero || d == 0;
    if (__builtin_mul_overflow(n, d, &n)) overflow = true;
  }
  if (zero) return 0;
  return overflow ? kNumelOverflow : n;
}

// "[64,784]"
inline std::string DimsToString(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

// Two extents agree when equal or when either is unknown (-1).
inline bool ExtentsAgree(int64_t a, int64_t b) {
  return a < 0 || b < 0 || a == b;
}

}  // namespace parex
