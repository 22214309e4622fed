// The order top_k_v2 leaves a row in, shared by the CPU kernel and the CUDA
// kernel (which sorts on the host, kernels/cuda/metric_kernels.cc), so both
// break ties as PaddlePaddle does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace parex {

// Paddle 2.6's order for top_k_v2 (its CPU kernel's sequence of standard
// algorithms, whose ties fall where those algorithms leave them): over the
// (value, index) pairs of one row, partial_sort when 64 k < n; otherwise
// nth_element at k - 1, then (sorted) a sort of the first k - 1. NaN counts
// as the largest value.
template <typename T>
void PaddleTopKRow(std::vector<std::pair<T, int64_t>>* row, int64_t k,
                   bool largest, bool sorted) {
  auto before = [largest](const std::pair<T, int64_t>& l,
                          const std::pair<T, int64_t>& r) {
    const bool lnan = std::isnan(static_cast<double>(l.first));
    const bool rnan = std::isnan(static_cast<double>(r.first));
    return largest ? (lnan && !rnan) || l.first > r.first
                   : (!lnan && rnan) || l.first < r.first;
  };
  const int64_t n = static_cast<int64_t>(row->size());
  if (k * 64 < n) {
    std::partial_sort(row->begin(), row->begin() + k, row->end(), before);
    return;
  }
  std::nth_element(row->begin(), row->begin() + (k - 1), row->end(), before);
  if (sorted) std::sort(row->begin(), row->begin() + (k - 1), before);
}

}  // namespace parex
