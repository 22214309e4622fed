// Shared by the fuzz targets and the attribute-extremes test: the one entry
// point libFuzzer calls, and "run one small step of a program".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/reference_executor.h"
#include "kernels/scope.h"

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
// The scope values and feeds RunOneSmallStep runs with.
void SmallInputs(const Program& program, Scope* scope, FeedMap* feeds);
// The output of the op the program marks as its loss (op_role Loss), or "".
std::string LossOf(const Program& program);

// Every attribute of every op of block 0 at extreme values (ints at
// INT_MIN, -2^20, -1, 0, 1, 3, 2^20, INT_MAX; floats at +-1e30, 0, inf,
// NaN; lists emptied, shortened and lengthened; strings empty or unknown),
// bookkeeping attributes (op_role, ...) left alone. `visit` gets each
// modified program and a description of the change.
void ForEachAttributeVariant(
    const Program& program,
    const std::function<void(const Program&, const std::string&)>& visit);

}  // namespace parex::fuzz
