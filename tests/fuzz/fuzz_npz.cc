// Fuzz target: the .npz reader of `parex train --data` (apps/cli/npz.h), a
// zip of .npy members through libzip. Anything it accepts holds named arrays
// whose bytes back their shapes.
#include <string>

#include "apps/cli/npz.h"
#include "base/check.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parex::fuzz::SetUpOnce();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  parex::StatusOr<parex::NamedArrays> arrays =
      parex::ParseNpz(bytes, "fuzz.npz");
  if (!arrays.ok()) return 0;
  for (const auto& [name, t] : *arrays) {
    PAREX_CHECK(!name.empty() || arrays->size() == 1, "two arrays named ''");
    PAREX_CHECK(t.numel() == 0 || t.raw_data() != nullptr,
                "an array without data: " + name);
  }
  return 0;
}
