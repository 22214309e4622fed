// Fuzz target: load a program and run one step of it on a small input, as
// `parex infer` does with a model: parse, validate, give every persistable
// and every input a small value of its declared shape (unknown extents 2),
// and run block 0 on the reference executor under a 32 MiB allocation limit.
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace parex;
  fuzz::SetUpOnce();
  std::optional<Program> program = fuzz::ParseValidProgram(data, size);
  if (!program || program->global_block().num_ops() > 256) return 0;
  (void)fuzz::RunOneSmallStep(*program);
  return 0;
}
