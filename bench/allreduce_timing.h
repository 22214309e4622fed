// What the cross-process all-reduce benchmark and its MPI peer share, so
// both sides time the same batches: ops per batch by size, the median.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace parex::bench {

// About 32 MiB moved per batch: 2 ops at 64 MiB ... 200 at 4 KiB.
inline int OpsPerBatch(int64_t bytes) {
  return static_cast<int>(
      std::clamp<int64_t>((int64_t{32} << 20) / bytes, 2, 200));
}

inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

}  // namespace parex::bench
