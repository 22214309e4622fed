#include "tests/fuzz/fuzz_util.h"

#include <cstring>
#include <mutex>
#include <set>

#include "base/logging.h"
#include "base/checked_math.h"
#include "kernels/allocator.h"
#include "graph/validate.h"
#include "kernels/reference_executor.h"
#include "proto/program_io.h"

namespace parex::fuzz {

namespace {

// Declared dims with unknown extents set to 2; false when too large to try.
bool SmallDims(const VarDesc& var, Dims* dims) {
  *dims = var.dims();
  for (int64_t& d : *dims) {
    if (d < 0) d = 2;
  }
  StatusOr<int64_t> n = CheckedNumel(*dims, var.name());
  return n.ok() && *n <= (int64_t{1} << 20);
}

bool SmallValue(const VarDesc& var, Tensor* t) {
  Dims dims;
  if (!var.is_tensor() || !SmallDims(var, &dims)) return false;
  const DType dtype = var.dtype();
  if (dtype == DType::kUndefined) return false;
  if (!t->TryAllocate(dtype, dims).ok()) return false;
  if (t->bytes() > 0) std::memset(t->raw_data(), 0, t->bytes());
  if (dtype == DType::kFP32) {
    for (int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] = 0.5f;
  } else if (dtype == DType::kFP64) {
    for (int64_t i = 0; i < t->numel(); ++i) t->data<double>()[i] = 0.5;
  }
  return true;
}

}  // namespace

std::optional<Program> ParseValidProgram(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  StatusOr<proto::ProgramDesc> desc = ParseProgramBinary(bytes, "fuzz program");
  if (!desc.ok()) return std::nullopt;
  Program program(std::move(*desc));
  if (!ValidateProgram(program).ok()) return std::nullopt;
  return program;
}

Status RunOneSmallStep(const Program& program) {
  const Block& block = program.global_block();
  Scope scope;
  for (const auto& var : block.vars()) {
    if (!var->persistable() || var->name() == "feed" || var->name() == "fetch") {
      continue;
    }
    Tensor t;
    if (SmallValue(*var, &t)) {
      *scope.Var(var->name())->GetMutableTensor() = std::move(t);
    }
  }
  FeedMap feeds;
  std::set<std::string> written;
  for (const auto& op : block.ops()) {
    if (op->type() == "feed") {
      for (const std::string& out : op->Output("Out")) {
        const VarDesc* var = block.FindVar(out);
        Tensor t;
        if (var != nullptr && SmallValue(*var, &t)) feeds[out] = std::move(t);
        written.insert(out);
      }
      continue;
    }
    for (const std::string& slot : op->InputSlots()) {
      for (const std::string& in : op->Input(slot)) {
        const VarDesc* var = block.FindVar(in);
        if (var == nullptr || var->persistable() || written.count(in) > 0 ||
            feeds.count(in) > 0) {
          continue;
        }
        Tensor t;
        if (SmallValue(*var, &t)) feeds[in] = std::move(t);
      }
    }
    for (const std::string& slot : op->OutputSlots()) {
      for (const std::string& out : op->Output(slot)) written.insert(out);
    }
  }
  ReferenceExecutor executor;
  return executor.Run(program, &scope, feeds, {}).status();
}

void SetUpOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    SetLogLevel("off");
    RouteProtobufLogging();
    SetAllocationLimitForTesting(kFuzzMemoryLimit);
  });
}

}  // namespace parex::fuzz
