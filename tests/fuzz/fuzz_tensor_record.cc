// Fuzz target: Paddle's tensor records (proto/tensor_record.h through
// kernels/io/tensor_io.h), read back to back as in a combined parameter file.
// A record that reads must write back to the same bytes' meaning.
#include <sstream>
#include <string>

#include "base/check.h"
#include "kernels/io/tensor_io.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parex::fuzz::SetUpOnce();
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (int record = 0; record < 16 && in.peek() != EOF; ++record) {
    parex::Tensor t;
    if (!parex::ReadTensor(in, "fuzz record", &t).ok()) return 0;
    std::ostringstream out;
    PAREX_CHECK(parex::WriteTensor(out, t).ok(), "WriteTensor failed");
    std::istringstream again(out.str());
    parex::Tensor back;
    parex::Status s = parex::ReadTensor(again, "round trip", &back);
    PAREX_CHECK(s.ok(), s.ToString());
    PAREX_CHECK(back.dims() == t.dims() && back.dtype() == t.dtype() &&
                    back.lod() == t.lod(),
                "the round trip changed the record");
  }
  return 0;
}
