// Row-major walks over multi-indices, for the kernels that move elements
// (layout_kernels.cc, selection_kernels.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "base/dims.h"

namespace parex::cpu {

// Row-major strides of `dims`.
inline std::vector<int64_t> StridesOf(const Dims& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    s[d] = s[d + 1] * dims[d + 1];
  }
  return s;
}

// Calls f(out_flat, index) for every element of `dims` in row-major order,
// index being its multi-index.
template <typename F>
void ForEachIndex(const Dims& dims, F&& f) {
  int64_t n = 1;
  for (int64_t e : dims) n *= e;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, index);
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace parex::cpu
