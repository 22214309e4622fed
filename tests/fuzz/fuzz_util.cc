#include "tests/fuzz/fuzz_util.h"

#include <climits>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>

#include "base/checked_math.h"
#include "base/logging.h"
#include "graph/ir/op_role.h"
#include "graph/ir/validate.h"
#include "kernels/allocator.h"
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
  Scope scope;
  FeedMap feeds;
  SmallInputs(program, &scope, &feeds);
  ReferenceExecutor executor;
  return executor.Run(program, &scope, feeds, {}).status();
}

void SmallInputs(const Program& program, Scope* scope, FeedMap* feeds_out) {
  const Block& block = program.global_block();
  Scope& s = *scope;
  FeedMap& feeds = *feeds_out;
  for (const auto& var : block.vars()) {
    if (!var->persistable() || var->name() == "feed" ||
        var->name() == "fetch") {
      continue;
    }
    Tensor t;
    if (SmallValue(*var, &t)) {
      *s.Var(var->name())->GetMutableTensor() = std::move(t);
    }
  }
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
}

std::string LossOf(const Program& program) {
  std::string loss;
  for (const auto& op : program.global_block().ops()) {
    if (OpRole(*op) == kOpRoleLoss && !op->OutputSlots().empty()) {
      const auto outs = op->Output(op->OutputSlots().front());
      if (!outs.empty()) loss = outs.front();
    }
  }
  return loss;
}

namespace {

using Attr = proto::OpDesc::Attr;

const std::vector<int64_t>& ExtremeInts() {
  static const std::vector<int64_t> v = {INT_MIN, -(1 << 20), -5,     -1, 0, 1,
                                         3,       1 << 20,    INT_MAX};
  return v;
}
const std::vector<double>& ExtremeFloats() {
  static const std::vector<double> v = {
      -1e30,
      -1,
      0,
      1e-30,
      2,
      1e30,
      std::numeric_limits<double>::infinity(),
      std::numeric_limits<double>::quiet_NaN()};
  return v;
}

// Variants of one attribute: each scalar extreme; for lists, every element
// set to each extreme, and lists of 0, 1 and 5 elements.
std::vector<Attr> Variants(const Attr& a) {
  std::vector<Attr> out;
  auto with = [&](auto set) {
    Attr v = a;
    set(&v);
    out.push_back(v);
  };
  switch (a.type()) {
    case proto::INT:
      for (int64_t x : ExtremeInts())
        with([&](Attr* v) { v->set_i(static_cast<int>(x)); });
      break;
    case proto::LONG:
      for (int64_t x : ExtremeInts()) with([&](Attr* v) { v->set_l(x); });
      with([&](Attr* v) { v->set_l(INT64_MAX); });
      with([&](Attr* v) { v->set_l(INT64_MIN); });
      break;
    case proto::BOOLEAN:
      with([&](Attr* v) { v->set_b(!a.b()); });
      break;
    case proto::FLOAT:
      for (double x : ExtremeFloats())
        with([&](Attr* v) { v->set_f(static_cast<float>(x)); });
      break;
    case proto::FLOAT64:
      for (double x : ExtremeFloats())
        with([&](Attr* v) { v->set_float64(x); });
      break;
    case proto::INTS:
      for (int64_t x : ExtremeInts()) {
        with([&](Attr* v) {
          for (int i = 0; i < v->ints_size(); ++i)
            v->set_ints(i, static_cast<int>(x));
        });
        if (a.ints_size() > 0) {
          with([&](Attr* v) { v->set_ints(0, static_cast<int>(x)); });
        }
      }
      with([&](Attr* v) { v->clear_ints(); });
      with([&](Attr* v) {
        v->clear_ints();
        v->add_ints(2);
      });
      with([&](Attr* v) {
        v->clear_ints();
        for (int i = 0; i < 5; ++i) v->add_ints(1);
      });
      break;
    case proto::LONGS:
      for (int64_t x : {int64_t{INT64_MIN}, int64_t{-1}, int64_t{0},
                        int64_t{1} << 40, int64_t{INT64_MAX}}) {
        with([&](Attr* v) {
          for (int i = 0; i < v->longs_size(); ++i) v->set_longs(i, x);
        });
      }
      with([&](Attr* v) { v->clear_longs(); });
      with([&](Attr* v) {
        v->clear_longs();
        for (int i = 0; i < 12; ++i) v->add_longs(2);
      });
      break;
    case proto::FLOATS:
      for (double x : ExtremeFloats()) {
        with([&](Attr* v) {
          for (int i = 0; i < v->floats_size(); ++i)
            v->set_floats(i, static_cast<float>(x));
        });
      }
      with([&](Attr* v) { v->clear_floats(); });
      break;
    case proto::STRING:
      with([&](Attr* v) { v->set_s(""); });
      with([&](Attr* v) { v->set_s("no such choice"); });
      break;
    default:
      break;
  }
  return out;
}

}  // namespace

void ForEachAttributeVariant(
    const Program& program,
    const std::function<void(const Program&, const std::string&)>& visit) {
  const proto::ProgramDesc& base = program.proto();
  const int num_ops = base.blocks(0).ops_size();
  for (int i = 0; i < num_ops; ++i) {
    const proto::OpDesc& op = base.blocks(0).ops(i);
    for (int a = 0; a < op.attrs_size(); ++a) {
      const std::string& name = op.attrs(a).name();
      if (name == "op_role" || name == "op_role_var" ||
          name == "op_namescope" || name == "op_callstack" ||
          name == "op_device" || name == "with_quant_attr") {
        continue;  // bookkeeping the executors read through OpRole only
      }
      for (const Attr& variant : Variants(op.attrs(a))) {
        proto::ProgramDesc desc = base;
        *desc.mutable_blocks(0)->mutable_ops(i)->mutable_attrs(a) = variant;
        visit(Program(std::move(desc)),
              "op #" + std::to_string(i) + " '" + op.type() + "' attr '" +
                  name + "' = " + variant.ShortDebugString());
      }
    }
  }
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
