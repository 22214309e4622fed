#include "actors/op_handle_tasks.h"

#include <cstring>
#include <utility>

#include "base/config.h"
#include "kernels/op_runner.h"

namespace parex {
namespace {

// dst = dst + src, elementwise, for the dtypes gradients have.
template <typename T>
void AddInto(Tensor* dst, const Tensor& src) {
  T* d = dst->data<T>();
  const T* s = src.data<T>();
  const int64_t n = dst->numel();
  for (int64_t i = 0; i < n; ++i) d[i] += s[i];
}

Status AddTensorInto(Tensor* dst, const Tensor& src) {
  switch (dst->dtype()) {
    case DType::kFP32: AddInto<float>(dst, src); return Status::Ok();
    case DType::kFP64: AddInto<double>(dst, src); return Status::Ok();
    case DType::kInt32: AddInto<int32_t>(dst, src); return Status::Ok();
    case DType::kInt64: AddInto<int64_t>(dst, src); return Status::Ok();
    default:
      return Unimplemented(std::string("collectives over ") +
                           DTypeName(dst->dtype()) + " tensors");
  }
}

void CopyInto(Tensor* dst, const Tensor& src) {
  if (dst->SharesBufferWith(src)) return;
  dst->Allocate(src.dtype(), src.dims(), src.place());
  if (src.bytes() > 0) std::memcpy(dst->raw_data(), src.raw_data(), src.bytes());
}

}  // namespace

OpHandleTasks::OpHandleTasks(const SsaGraph* graph,
                             const std::vector<Scope*>* exec_scopes,
                             bool dry_run)
    : graph_(graph), exec_scopes_(exec_scopes), dry_run_(dry_run) {
  const uint64_t seed = static_cast<uint64_t>(GetConfigInt("PAREX_SEED"));
  contexts_.resize(graph->ops().size());
  fetch_slot_.assign(graph->ops().size(), -1);
  int fetches = 0;
  for (const SsaOp& op : graph->ops()) {
    if (op.kind == SsaOpKind::kComputation) {
      auto ctx =
          std::make_unique<CpuDeviceContext>(graph->places()[op.place]);
      ctx->SetSeed(seed * 1000003u + static_cast<uint64_t>(op.place) * 7919u +
                   static_cast<uint64_t>(op.program_op));
      contexts_[op.id] = std::move(ctx);
    } else if (op.kind == SsaOpKind::kFetch) {
      fetch_slot_[op.id] = fetches++;
      fetch_names_.push_back(op.var_names[0]);
    }
  }
  fetched_.resize(fetches);
}

OpHandleTasks::~OpHandleTasks() = default;

void OpHandleTasks::BeginStep() {
  for (auto& slot : fetched_) slot.assign(graph_->num_places(), Tensor());
}

std::vector<std::vector<Tensor>> OpHandleTasks::TakeFetched() {
  std::vector<std::vector<Tensor>> out = std::move(fetched_);
  fetched_.assign(out.size(), {});
  return out;
}

StatusOr<Tensor*> OpHandleTasks::PlaceTensor(const SsaOp& op,
                                             const std::string& name,
                                             int place) const {
  Variable* v = (*exec_scopes_)[place]->FindVar(name);
  if (v == nullptr) {
    return Internal(graph_->OpLabel(op.id) + ": no variable '" + name +
                    "' on " + graph_->places()[place].ToString());
  }
  return v->GetMutableTensor();
}

Status OpHandleTasks::Run(int id) {
  const SsaOp& op = graph_->op(id);
  if (dry_run_ && op.kind != SsaOpKind::kFetch) return Status::Ok();
  switch (op.kind) {
    case SsaOpKind::kComputation: return RunComputation(op);
    case SsaOpKind::kScaleLossGrad: return RunScaleLossGrad(op);
    case SsaOpKind::kFetch: return RunFetch(op);
    default: return RunCollective(op);
  }
}

Status OpHandleTasks::RunComputation(const SsaOp& op) {
  const OpDesc& desc = graph_->program().global_block().op(op.program_op);
  Status s = RunOp(desc, (*exec_scopes_)[op.place], contexts_[op.id].get());
  if (s.ok()) return s;
  return Status(s.code(), "place " + graph_->places()[op.place].ToString() +
                              ": " + s.message());
}

Status OpHandleTasks::RunScaleLossGrad(const SsaOp& op) {
  const std::string grad = graph_->var(op.outputs[0]).name;
  PAREX_ASSIGN_OR_RETURN(Tensor * loss,
                         PlaceTensor(op, graph_->loss_name, op.place));
  PAREX_ASSIGN_OR_RETURN(Tensor * out, PlaceTensor(op, grad, op.place));
  out->Allocate(loss->dtype(), loss->dims(), loss->place());
  const int64_t n = out->numel();
  if (out->dtype() == DType::kFP32) {
    std::fill(out->data<float>(), out->data<float>() + n,
              static_cast<float>(op.scale));
  } else if (out->dtype() == DType::kFP64) {
    std::fill(out->data<double>(), out->data<double>() + n, op.scale);
  } else {
    return InvalidArgument(graph_->OpLabel(op.id) + ": the loss '" +
                           graph_->loss_name + "' is " +
                           DTypeName(out->dtype()) + ", not a float tensor");
  }
  return Status::Ok();
}

Status OpHandleTasks::RunCollective(const SsaOp& op) {
  const int n = graph_->num_places();
  for (const std::string& name : op.var_names) {
    std::vector<Tensor*> t(n);
    for (int p = 0; p < n; ++p) {
      PAREX_ASSIGN_OR_RETURN(t[p], PlaceTensor(op, name, p));
    }
    const int root = op.root >= 0 ? op.root : 0;
    for (int p = 0; p < n; ++p) {
      if (op.kind == SsaOpKind::kBroadcast && p != root) continue;
      if (t[p]->dtype() != t[root]->dtype() ||
          t[p]->dims() != t[root]->dims()) {
        return InvalidArgument(
            std::string(SsaOpKindName(op.kind)) + " '" + name + "' place " +
            graph_->places()[p].ToString() + ": " + t[p]->DebugString() +
            " != " + t[root]->DebugString() + " on " +
            graph_->places()[root].ToString());
      }
    }
    switch (op.kind) {
      case SsaOpKind::kAllReduce:
      case SsaOpKind::kFusedAllReduce:
      case SsaOpKind::kAllGather: {
        // Sum in place order on place 0, then copy: (p0 + p1) + p2 ...
        // The gradients parex produces are dense, so the rows of a sparse
        // gradient are merged by this sum too.
        for (int p = 1; p < n; ++p) {
          PAREX_RETURN_IF_ERROR(AddTensorInto(t[0], *t[p]));
        }
        for (int p = 1; p < n; ++p) CopyInto(t[p], *t[0]);
        break;
      }
      case SsaOpKind::kReduce: {
        // Sum in place order into the root.
        Tensor sum = t[0]->Clone();
        for (int p = 1; p < n; ++p) {
          PAREX_RETURN_IF_ERROR(AddTensorInto(&sum, *t[p]));
        }
        CopyInto(t[root], sum);
        break;
      }
      case SsaOpKind::kBroadcast:
        for (int p = 0; p < n; ++p) {
          if (p != root) CopyInto(t[p], *t[root]);
        }
        break;
      default:
        return Internal(graph_->OpLabel(op.id) + ": not a collective");
    }
  }
  return Status::Ok();
}

Status OpHandleTasks::RunFetch(const SsaOp& op) {
  std::vector<Tensor>& slot = fetched_[fetch_slot_[op.id]];
  for (int p = 0; p < graph_->num_places(); ++p) {
    PAREX_ASSIGN_OR_RETURN(Tensor * t, PlaceTensor(op, op.var_names[0], p));
    if (dry_run_) continue;
    if (!t->defined()) {
      return FailedPrecondition("fetch '" + op.var_names[0] + "' on " +
                                graph_->places()[p].ToString() +
                                ": the step did not produce it");
    }
    slot[p] = t->Clone();
  }
  return Status::Ok();
}

StatusOr<Tensor> ConcatAlongDim0(const std::vector<Tensor>& parts) {
  if (parts.empty()) return Tensor();
  Dims dims = parts[0].dims();
  if (dims.empty()) dims = {1};
  int64_t rows = 0;
  for (const Tensor& t : parts) {
    Dims d = t.dims().empty() ? Dims{1} : t.dims();
    if (t.dtype() != parts[0].dtype() ||
        !std::equal(d.begin() + 1, d.end(), dims.begin() + 1, dims.end())) {
      return InvalidArgument("fetch: per-place values " + t.DebugString() +
                             " and " + parts[0].DebugString() +
                             " cannot be concatenated along dim 0");
    }
    rows += d[0];
  }
  dims[0] = rows;
  Tensor out(parts[0].dtype(), dims);
  char* dst = static_cast<char*>(out.raw_data());
  for (const Tensor& t : parts) {
    if (t.bytes() > 0) std::memcpy(dst, t.raw_data(), t.bytes());
    dst += t.bytes();
  }
  return out;
}

}  // namespace parex
