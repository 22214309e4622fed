#include "graph/ssa/build_strategy.h"

namespace parex {

const char* ReduceStrategyName(BuildStrategy::ReduceStrategy s) {
  return s == BuildStrategy::ReduceStrategy::kReduce ? "reduce" : "allreduce";
}

const char* GradientScaleName(BuildStrategy::GradientScale s) {
  switch (s) {
    case BuildStrategy::GradientScale::kCoeffNumDevice:
      return "coeff_num_device";
    case BuildStrategy::GradientScale::kOne:
      return "one";
    case BuildStrategy::GradientScale::kCustomized:
      return "customized";
  }
  return "?";
}

}  // namespace parex
