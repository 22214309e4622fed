#include "graph/ssa/optimizer_slices.h"

#include <algorithm>
#include <map>

namespace parex {

const OptimizerSlots* SliceableOptimizer(const std::string& type) {
  static const std::map<std::string, OptimizerSlots> table = {
      {"sgd", {{"Param", "Grad"}, {"ParamOut"}, {"LearningRate"}, {}}},
      {"momentum",
       {{"Param", "Grad", "Velocity"},
        {"ParamOut", "VelocityOut"},
        {"LearningRate"},
        {}}},
      {"adam",
       {{"Param", "Grad", "Moment1", "Moment2"},
        {"ParamOut", "Moment1Out", "Moment2Out"},
        {"LearningRate", "Beta1Pow", "Beta2Pow", "Beta1Tensor", "Beta2Tensor",
         "EpsilonTensor"},
        {"Beta1PowOut", "Beta2PowOut"}}},
  };
  auto it = table.find(type);
  return it == table.end() ? nullptr : &it->second;
}

bool CanSliceOptimizer(const OpDesc& op) {
  const OptimizerSlots* slots = SliceableOptimizer(op.type());
  if (slots == nullptr) return false;
  auto known = [](const std::vector<std::string>& a,
                  const std::vector<std::string>& b, const std::string& s) {
    return std::find(a.begin(), a.end(), s) != a.end() ||
           std::find(b.begin(), b.end(), s) != b.end();
  };
  for (const auto& slot : op.proto().inputs()) {
    if (slot.arguments_size() == 0) continue;
    if (slot.arguments_size() != 1 ||
        !known(slots->sliced_inputs, slots->scalar_inputs, slot.parameter())) {
      return false;
    }
  }
  for (const auto& slot : op.proto().outputs()) {
    if (slot.arguments_size() == 0) continue;
    if (slot.arguments_size() != 1 ||
        !known(slots->sliced_outputs, slots->scalar_outputs,
               slot.parameter())) {
      return false;
    }
  }
  // Every sliced slot present (Param, Grad and ParamOut at least).
  for (const std::string& s : slots->sliced_inputs) {
    if (op.FirstInput(s).empty()) return false;
  }
  // Every sliced output updates a sliced input in place (ParamOut is Param,
  // Moment1Out is Moment1, ...): a slice writes through its views into the
  // very tensors it read, never into a separate output it would allocate.
  for (const std::string& s : slots->sliced_outputs) {
    const std::string out = op.FirstOutput(s);
    if (out.empty()) return false;
    bool in_place = false;
    for (const std::string& in : slots->sliced_inputs) {
      in_place = in_place || op.FirstInput(in) == out;
    }
    if (!in_place) return false;
  }
  return true;
}

}  // namespace parex
