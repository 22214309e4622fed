// Fuzz target: a program file as `parex inspect` / `graph` read it: parse
// (binary ProgramDesc), validate, and build the SSA graph over 2 CPU places
// in both gradient modes, with the loss the program marks (op_role Loss).
#include <string>

#include "graph/ssa/multi_device_builder.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parex;
  fuzz::SetUpOnce();
  std::optional<Program> parsed = fuzz::ParseValidProgram(data, size);
  if (!parsed) return 0;
  const Program& program = *parsed;
  const std::string loss = fuzz::LossOf(program);
  for (auto mode : {BuildStrategy::ReduceStrategy::kAllReduce,
                    BuildStrategy::ReduceStrategy::kReduce}) {
    BuildStrategy strategy;
    strategy.reduce = mode;
    (void)BuildMultiDeviceGraph(program, {Place::CPU(0), Place::CPU(1)}, loss,
                                strategy);
  }
  return 0;
}
