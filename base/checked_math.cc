#include "base/checked_math.h"

namespace parex {
namespace {

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

}  // namespace

StatusOr<int64_t> CheckedNumel(const std::vector<int64_t>& dims,
                               const std::string& what) {
  if (dims.size() > kMaxRank) {
    return OutOfRange(what + ": rank " + std::to_string(dims.size()) +
                      " exceeds the largest supported rank " +
                      std::to_string(kMaxRank));
  }
  bool zero = false;
  for (int64_t d : dims) {
    if (d < 0) {
      return OutOfRange(what + ": negative extent in shape " + DimsText(dims));
    }
    if (d > kMaxNumel) {
      return OutOfRange(what + ": extent " + std::to_string(d) + " of shape " +
                        DimsText(dims) + " exceeds 2^48");
    }
    zero = zero || d == 0;
  }
  if (zero) return int64_t{0};
  int64_t n = 1;
  for (int64_t d : dims) {
    if (!CheckedMul(n, d, &n) || n > kMaxNumel) {
      return OutOfRange(what + ": shape " + DimsText(dims) +
                        " has more than 2^48 elements");
    }
  }
  return n;
}

StatusOr<uint64_t> CheckedBytes(int64_t numel, size_t element_size,
                                const std::string& what) {
  uint64_t bytes = 0;
  if (numel < 0 ||
      !CheckedMul(static_cast<uint64_t>(numel), uint64_t{element_size},
                  &bytes) ||
      bytes > kMaxTensorBytes) {
    return OutOfRange(
        what + ": " + std::to_string(numel) + " elements of " +
        std::to_string(element_size) +
        " bytes exceed the largest tensor parex allocates (1 PiB)");
  }
  return bytes;
}

}  // namespace parex
