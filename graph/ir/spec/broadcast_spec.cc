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

namespace {

// numpy's rule (axis -1): both operands right-aligned with Out.
Status NumpyBroadcast(const Dims& x, const Dims& y, const char* x_name,
                      const char* y_name, ElementwiseExtents* e) {
  const int x_rank = static_cast<int>(x.size());
  const int y_rank = static_cast<int>(y.size());
  e->rank = std::max(x_rank, y_rank);
  for (int d = 0; d < e->rank; ++d) {
    const int xi = d - (e->rank - x_rank);
    const int yi = d - (e->rank - y_rank);
    const int64_t a = xi >= 0 ? x[xi] : 1;
    const int64_t b = yi >= 0 ? y[yi] : 1;
    if (a >= 0 && b >= 0 && a != b && a != 1 && b != 1) {
      return InvalidArgument(
          std::string(x_name) + " " + DimsToString(x) + " and " + y_name + " " +
          DimsToString(y) +
          " cannot be broadcast together at axis -1: " + x_name + "'s extent " +
          std::to_string(a) + " and " + y_name + "'s " + std::to_string(b) +
          " meet at dim " + std::to_string(d) + " of the output");
    }
    e->x[d] = a;
    e->y[d] = b;
    // An unknown extent (-1) paired with 1 or with another unknown stays
    // unknown; paired with a larger one it must be 1 or that one.
    e->out[d] = a == 1 ? b : b == 1 ? a : std::max(a, b);
  }
  return Status::Ok();
}

// Fluid's rule (axis >= 0): Y, less its trailing 1s, inside X from `axis`.
Status FluidBroadcast(const Dims& x, const Dims& y, int axis,
                      const char* x_name, const char* y_name,
                      ElementwiseExtents* e) {
  const int x_rank = static_cast<int>(x.size());
  int trimmed = static_cast<int>(y.size());
  while (trimmed > 0 && y[trimmed - 1] == 1) --trimmed;
  auto mismatch = [&](const std::string& why) {
    return InvalidArgument(std::string(y_name) + " " + DimsToString(y) +
                           " cannot be broadcast to " + x_name + " " +
                           DimsToString(x) + " at axis " +
                           std::to_string(axis) + ": " + why);
  };
  if (trimmed > 0 && axis > x_rank - trimmed) {
    return mismatch(std::string(y_name) + " has more dims than " + x_name +
                    " has from the axis on");
  }
  e->rank = x_rank;
  for (int d = 0; d < x_rank; ++d) {
    e->x[d] = e->out[d] = x[d];
    e->y[d] = 1;
  }
  for (int i = 0; i < trimmed; ++i) {
    const int64_t ye = y[i];
    const int64_t xe = x[axis + i];
    if (!ExtentsAgree(xe, ye) && ye != 1) {
      return mismatch("extent " + std::to_string(ye) +
                      " != " + std::to_string(xe) + " at dim " +
                      std::to_string(axis + i) + " of " + x_name);
    }
    e->y[axis + i] = ye;
  }
  return Status::Ok();
}

}  // namespace

Status ElementwiseBroadcast(const Dims& x, const Dims& y, int axis,
                            ElementwiseExtents* extents, const char* x_name,
                            const char* y_name) {
  if (axis < -1) {
    return InvalidArgument("axis " + std::to_string(axis) + " must be >= -1");
  }
  for (const Dims* d : {&x, &y}) {
    if (d->size() > kMaxRank) {
      return InvalidArgument(std::string(d == &x ? x_name : y_name) + " " +
                             DimsToString(*d) + " has rank " +
                             std::to_string(d->size()) + ", above " +
                             std::to_string(kMaxRank));
    }
  }
  if (x == y) {  // Fluid and Paddle 2.x: Out is X at any axis
    extents->rank = static_cast<int>(x.size());
    std::copy(x.begin(), x.end(), extents->x);
    std::copy(x.begin(), x.end(), extents->y);
    std::copy(x.begin(), x.end(), extents->out);
    return Status::Ok();
  }
  return axis == -1 ? NumpyBroadcast(x, y, x_name, y_name, extents)
                    : FluidBroadcast(x, y, axis, x_name, y_name, extents);
}

StatusOr<BroadcastSpec> ElementwiseBroadcastSpec(const Dims& x, const Dims& y,
                                                 int axis, const char* x_name,
                                                 const char* y_name) {
  ElementwiseExtents e;
  PAREX_RETURN_IF_ERROR(ElementwiseBroadcast(x, y, axis, &e, x_name, y_name));
  BroadcastSpec spec;
  spec.x.assign(e.x, e.x + e.rank);
  spec.y.assign(e.y, e.y + e.rank);
  spec.out.assign(e.out, e.out + e.rank);
  return spec;
}

}  // namespace parex
