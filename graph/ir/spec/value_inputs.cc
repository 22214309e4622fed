#include "graph/ir/spec/value_inputs.h"

#include <cmath>
#include <string>

namespace parex {

bool BindsAny(const ShapeContext& ctx,
              std::initializer_list<ValueInput> sources) {
  for (const ValueInput& s : sources) {
    if (ctx.HasInput(s.slot)) return true;
  }
  return false;
}

StatusOr<std::vector<int64_t>> IntsFromInputsOrAttr(
    const ShapeContext& ctx, std::initializer_list<ValueInput> sources,
    std::vector<int64_t> attr) {
  for (const ValueInput& s : sources) {
    if (!ctx.HasInput(s.slot)) continue;
    std::vector<double> values;
    const int tensors = s.per_tensor ? ctx.InputCount(s.slot) : 1;
    if (tensors > ShapeContext::kMaxShapeValues) {
      return ctx.Error("input '" + std::string(s.slot) + "' binds " +
                       std::to_string(tensors) + " tensors, more than a " +
                       "shape takes");
    }
    for (int i = 0; i < tensors; ++i) {
      PAREX_ASSIGN_OR_RETURN(std::vector<double> v, ctx.InputValues(s.slot, i));
      if (s.per_tensor && v.size() != 1) {
        return ctx.Error("input '" + std::string(s.slot) + "' tensor " +
                         std::to_string(i) + " holds " +
                         std::to_string(v.size()) + " values, not one");
      }
      values.insert(values.end(), v.begin(), v.end());
    }
    std::vector<int64_t> ints;
    for (double v : values) {
      // Within +-2^53 a double holds every integer exactly; beyond is no
      // extent or bound any tensor has.
      if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 0x1p53) {
        return ctx.Error("input '" + std::string(s.slot) + "' holds " +
                         std::to_string(v) + ", not an integer a shape takes");
      }
      ints.push_back(static_cast<int64_t>(v));
    }
    return ints;
  }
  return attr;
}

StatusOr<int64_t> IntFromInputOrAttr(const ShapeContext& ctx, const char* slot,
                                     int64_t attr) {
  PAREX_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                         IntsFromInputsOrAttr(ctx, {{slot, false}}, {attr}));
  if (v.size() != 1) {
    return ctx.Error("input '" + std::string(slot) + "' holds " +
                     std::to_string(v.size()) + " values, not one");
  }
  return v[0];
}

}  // namespace parex
