// What the cross-process all-reduce benchmark and its MPI peer share, so
// both sides time the same batches: ops per batch by size, the median.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace parex::bench {

// About 32 MiB moved per batch: 2 ops at 64 MiB ... `max_ops` (200 at
// 4 KiB). Calls of a microsecond (MPI on shared memory, and parex's path
// over it) take up to 2000, so that their batch lasts milliseconds too: a
// batch of 200 lasts 0.2 ms, within which the start of parex's step (its
// worker woken after the Gloo rows, 10-100 us on a VM) would weigh as no
// training step's does.
inline int OpsPerBatch(int64_t bytes, int64_t max_ops = 200) {
  return static_cast<int>(
      std::clamp<int64_t>((int64_t{32} << 20) / bytes, 2, max_ops));
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

}  // namespace parex::bench
