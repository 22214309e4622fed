// Shared by the fuzz targets and the attribute-extremes test: the one entry
// point libFuzzer calls, and "run one small step of a program".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "graph/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace parex::fuzz {

// Every target runs under this allocation limit (kernels/allocator.h), so a
// crafted shape fails with ResourceExhausted instead of exhausting memory.
inline constexpr size_t kFuzzMemoryLimit = size_t{32} << 20;

// Logging off, protobuf's logger routed, the allocation limit set.
void SetUpOnce();

// The input as a binary ProgramDesc that validates; nullopt otherwise.
std::optional<Program> ParseValidProgram(const uint8_t* data, size_t size);

// Runs block 0 of a validated program once on the reference executor: every
// persistable and every input (a feed op's target, or a non-persistable var
// read before any op writes it) gets a small value of its declared shape
// (unknown extents 2; 0.5 for floats, 0 for integers, so indices and labels
// are valid). Vars too large to try (over 2^20 elements) are left out and
// their readers fail as unfed. The run's Status is returned.
Status RunOneSmallStep(const Program& program);

}  // namespace parex::fuzz
