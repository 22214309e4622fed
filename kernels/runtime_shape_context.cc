#include "kernels/runtime_shape_context.h"

namespace parex {

StatusOr<std::vector<double>> RuntimeShapeContext::InputValues(
    std::string_view slot, int i) const {
  const Tensor* t = ctx_.Input(slot, i);
  const std::string what =
      ctx_.op().Label() + ": input '" + std::string(slot) + "'";
  if (t == nullptr || !t->initialized()) {
    return InvalidArgument(what + " holds no tensor; its values give a shape");
  }
  if (!t->place().is_cpu() && !t->place().is_sim()) {
    return Unimplemented(what + " is on " + t->place().ToString() +
                         "; shape values are read from host memory only");
  }
  if (t->numel() > kMaxShapeValues) {
    return InvalidArgument(what + " has " + std::to_string(t->numel()) +
                           " values, more than a shape takes (" +
                           std::to_string(kMaxShapeValues) + ")");
  }
  std::vector<double> values(t->numel());
  for (int64_t k = 0; k < t->numel(); ++k) {
    switch (t->dtype()) {
      case DType::kInt32:
        values[k] = t->data<int32_t>()[k];
        break;
      case DType::kInt64:
        values[k] = static_cast<double>(t->data<int64_t>()[k]);
        break;
      case DType::kFP32:
        values[k] = t->data<float>()[k];
        break;
      case DType::kFP64:
        values[k] = t->data<double>()[k];
        break;
      default:
        return InvalidArgument(what + " is " + DTypeName(t->dtype()) +
                               ", not a number type a shape is read from");
    }
  }
  return values;
}

}  // namespace parex
