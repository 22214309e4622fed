// Dims: the shape of a tensor or variable. -1 marks an unknown extent (the
// batch dimension of a program variable); runtime tensors have none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace parex {

using Dims = std::vector<int64_t>;

// Product of the extents; -1 if any extent is unknown.
inline int64_t Numel(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
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
inline bool ExtentsAgree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

}  // namespace parex
