// Fuzz target: load a program and run one step of it on a small input, as
// `parex infer` does with a model: parse, validate, give every persistable
// and every input a small value of its declared shape (unknown extents 2),
// and run block 0 on the reference executor under a 32 MiB allocation limit.
#include <string>

#include "graph/program.h"
#include "graph/validate.h"
#include "proto/program_io.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parex;
  fuzz::SetUpOnce();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  StatusOr<proto::ProgramDesc> desc = ParseProgramBinary(bytes, "fuzz program");
  if (!desc.ok()) return 0;
  Program program(std::move(*desc));
  if (!ValidateProgram(program).ok()) return 0;
  if (program.global_block().num_ops() > 256) return 0;
  (void)fuzz::RunOneSmallStep(program);
  return 0;
}
