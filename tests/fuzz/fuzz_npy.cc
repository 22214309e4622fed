// Fuzz target: the .npy reader of `parex infer` (apps/cli/npy.h). Anything it
// accepts must serialise back to a file it reads as the same tensor.
#include <cstring>
#include <string>

#include "apps/cli/npy.h"
#include "base/check.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parex::fuzz::SetUpOnce();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  parex::StatusOr<parex::Tensor> t = parex::ParseNpy(bytes, "fuzz.npy");
  if (!t.ok()) return 0;
  const std::string again = parex::SerializeNpy(*t);
  parex::StatusOr<parex::Tensor> back = parex::ParseNpy(again, "round trip");
  PAREX_CHECK(back.ok(), back.status().ToString());
  PAREX_CHECK(back->dims() == t->dims() && back->dtype() == t->dtype(),
              "the round trip changed the shape or dtype");
  PAREX_CHECK(t->bytes() == 0 ||
                  std::memcmp(back->raw_data(), t->raw_data(), t->bytes()) == 0,
              "the round trip changed the data");
  return 0;
}
