#include "graph/ir/spec/broadcast_spec.h"

#include <algorithm>
#include <string>

namespace parex {

StatusOr<BroadcastSpec> BroadcastBoth(const Dims& x, const Dims& y, int axis) {
  const bool x_longer = x.size() >= y.size();
  const Dims& longer = x_longer ? x : y;
  const Dims& shorter = x_longer ? y : x;
  const int gap = static_cast<int>(longer.size() - shorter.size());
  if (axis < -1 || axis > gap) {
    return InvalidArgument("axis " + std::to_string(axis) +
                           " is outside [-1, " + std::to_string(gap) +
                           "] for X " + DimsToString(x) + " and Y " +
                           DimsToString(y));
  }
  const int start = axis == -1 ? gap : axis;
  Dims padded(longer.size(), 1);
  std::copy(shorter.begin(), shorter.end(), padded.begin() + start);
  BroadcastSpec spec;
  spec.x = x_longer ? longer : padded;
  spec.y = x_longer ? padded : longer;
  spec.out.resize(longer.size());
  for (size_t d = 0; d < longer.size(); ++d) {
    const int64_t a = spec.x[d], b = spec.y[d];
    if (a >= 0 && b >= 0 && a != b && a != 1 && b != 1) {
      return InvalidArgument("X " + DimsToString(x) + " and Y " +
                             DimsToString(y) + " do not broadcast at axis " +
                             std::to_string(axis) + ": extents " +
                             std::to_string(a) + " and " + std::to_string(b) +
                             " meet at dim " + std::to_string(d));
    }
    if (a == 1) {
      spec.out[d] = b;
    } else if (b == 1) {
      spec.out[d] = a;
    } else {
      spec.out[d] = std::max(a, b);  // equal, or one unknown (-1)
    }
  }
  return spec;
}

}  // namespace parex
