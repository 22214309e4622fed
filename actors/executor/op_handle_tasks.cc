#include "actors/executor/op_handle_tasks.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/config.h"
#include "graph/ssa/optimizer_slices.h"
#include "kernels/op_runner.h"
#include "kernels/prepared_op.h"

namespace parex {
namespace {

// Every place's rows of one variable (vars[p]: place p's), in place order,
// on every place.
Status MergeRowsOnEveryPlace(const std::vector<Variable*>& vars,
                             const std::string& what) {
  const SelectedRows& first = *vars[0]->GetSelectedRows();
  int64_t rows = 0;
  for (Variable* v : vars) {
    const SelectedRows& s = *v->GetSelectedRows();
    Dims a = s.value.dims(), b = first.value.dims();
    if (!a.empty()) a[0] = 0;
    if (!b.empty()) b[0] = 0;
    if (s.height != first.height || s.value.dtype() != first.value.dtype() ||
        a != b || b.empty()) {
      return InvalidArgument(what + ": the places' sparse rows do not match");
    }
    rows += static_cast<int64_t>(s.rows.size());
  }
  SelectedRows merged;
  merged.height = first.height;
  Dims dims = first.value.dims();
  dims[0] = rows;
  PAREX_RETURN_IF_ERROR(
      merged.value.TryAllocate(first.value.dtype(), dims, first.value.place()));
  char* out = static_cast<char*>(merged.value.raw_data());
  for (Variable* v : vars) {
    const SelectedRows& s = *v->GetSelectedRows();
    merged.rows.insert(merged.rows.end(), s.rows.begin(), s.rows.end());
    if (s.value.bytes() > 0)
      std::memcpy(out, s.value.raw_data(), s.value.bytes());
    out += s.value.bytes();
  }
  const size_t n = vars.size();
  for (size_t p = 0; p < n; ++p) {
    SelectedRows* s = vars[p]->GetMutableSelectedRows();
    s->rows = merged.rows;
    s->height = merged.height;
    s->value = p + 1 < n ? merged.value.Clone() : std::move(merged.value);
  }
  return Status::Ok();
}

// The variables a sliced optimizer's slices see a range of (its sliced
// inputs and outputs), sorted, once each.
std::vector<std::string> SlicedVars(const OpDesc& desc,
                                    const OptimizerSlots& slots) {
  std::vector<std::string> names;
  for (const std::string& slot : slots.sliced_inputs) {
    names.push_back(desc.FirstInput(slot));
  }
  for (const std::string& slot : slots.sliced_outputs) {
    names.push_back(desc.FirstOutput(slot));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Each place's rows of one variable replaced by their dense sum.
Status DensifyRows(const std::vector<Variable*>& vars,
                   const std::vector<Place>& places, const std::string& what) {
  for (size_t p = 0; p < vars.size(); ++p) {
    if (!vars[p]->IsSelectedRows()) continue;
    Tensor dense;
    if (Status s = vars[p]->GetSelectedRows()->ToDense(&dense); !s.ok()) {
      return Status(s.code(),
                    what + " on " + places[p].ToString() + ": " + s.message());
    }
    *vars[p]->GetMutableTensor() = std::move(dense);
  }
  return Status::Ok();
}

}  // namespace

OpHandleTasks::OpHandleTasks(const SsaGraph* graph,
                             const std::vector<Scope*>* exec_scopes,
                             bool dry_run, std::shared_ptr<Communicator> comm,
                             int first_place, const DevicePlaces* devices)
    : graph_(graph),
      exec_scopes_(exec_scopes),
      dry_run_(dry_run),
      devices_(devices),
      comm_(std::move(comm)) {
  const uint64_t seed = static_cast<uint64_t>(GetConfigInt("PAREX_SEED"));
  contexts_.resize(graph->ops().size());
  groups_.resize(graph->ops().size());
  bound_.assign(graph->ops().size(), 0);
  prepared_.resize(graph->ops().size());
  slices_.resize(graph->ops().size());
  plans_.resize(graph->ops().size());
  call_names_.resize(graph->ops().size());
  in_process_ = dynamic_cast<InProcessCommunicator*>(comm_.get());
  fetch_slot_.assign(graph->ops().size(), -1);
  maybe_sparse_.assign(graph->ops().size(), 0);
  for (const GradInfo& g : graph->grads) {
    if (g.sparse && g.collective >= 0) maybe_sparse_[g.collective] = 1;
  }
  int fetches = 0;
  for (const SsaOp& op : graph->ops()) {
    if (op.kind == SsaOpKind::kComputation) {
      std::unique_ptr<DeviceContext> ctx =
          devices != nullptr
              ? devices->compute(op.place)->NewOnSameStream()
              : std::make_unique<CpuDeviceContext>(graph->places()[op.place]);
      ctx->SetSeed(seed * 1000003u +
                   static_cast<uint64_t>(first_place + op.place) * 7919u +
                   static_cast<uint64_t>(op.program_op));
      contexts_[op.id] = std::move(ctx);
    } else if (op.kind == SsaOpKind::kFetch) {
      fetch_slot_[op.id] = fetches++;
      fetch_names_.push_back(op.var_names[0]);
    }
  }
  fetched_.resize(fetches);
  pending_.assign(fetches, std::vector<PendingFetch>(graph->num_places()));
}

OpHandleTasks::~OpHandleTasks() = default;

void OpHandleTasks::ScopesChanged() {
  std::fill(bound_.begin(), bound_.end(), 0);
  for (auto& p : prepared_) p.reset();
  // Sliced optimizers: their scopes are made here, between steps, as kids
  // of the owner's new execution scope (the old ones went with it).
  for (const SsaOp& op : graph_->ops()) {
    if (op.kind != SsaOpKind::kComputation || op.num_slices <= 0) continue;
    slices_[op.id] = MakeSliceState(op);
  }
}

std::unique_ptr<OpHandleTasks::SliceState> OpHandleTasks::MakeSliceState(
    const SsaOp& op) const {
  auto state = std::make_unique<SliceState>();
  const OpDesc& desc = graph_->program().global_block().op(op.program_op);
  const OptimizerSlots* slots = SliceableOptimizer(desc.type());
  const int owner = op.slice >= 0 ? op.root : op.place;
  state->scope = (*exec_scopes_)[owner]->NewScope();
  if (op.slice >= 0) {
    state->proto = std::make_unique<proto::OpDesc>(desc.proto());
    state->desc = std::make_unique<OpDesc>(state->proto.get(), desc.block_idx(),
                                           desc.index());
    for (const std::string& slot : slots->scalar_outputs) {
      state->desc->SetOutput(slot, {});
    }
  }
  // (place, var) each view shows, and the view's name.
  std::vector<std::pair<int, std::string>> sources;
  std::vector<std::string> view_names;
  for (const std::string& name : SlicedVars(desc, *slots)) {
    sources.emplace_back(owner, name);
    view_names.push_back(name);
  }
  // A slice that finishes its gradient's in-process reduce, with a kernel
  // that adds gradients itself: Grad is place 0's range of the gradient
  // and the addends places 1.. N-1's, the reduce's order, under names of
  // their own (one pass over the range instead of sum, then update).
  if (op.slice >= 0 && op.sliced_reduce >= 0 && in_process_ != nullptr &&
      !slots->grad_addends.empty()) {
    const std::string grad = desc.FirstInput("Grad");
    std::vector<std::string> grads;
    for (int p = 0; p < graph_->num_places(); ++p) {
      grads.push_back(grad + "@parex_place" + std::to_string(p));
      sources.emplace_back(p, grad);
      view_names.push_back(grads.back());
    }
    state->desc->SetInput("Grad", {grads[0]});
    state->desc->SetInput(
        slots->grad_addends,
        std::vector<std::string>(grads.begin() + 1, grads.end()));
    state->sums_gradient = true;
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto& [place, name] = sources[i];
    const Variable* source = (*exec_scopes_)[place]->FindVar(name);
    if (source == nullptr) {
      state->error =
          Internal(graph_->OpLabel(op.id) + ": no variable '" + name + "' on " +
                   graph_->places()[place].ToString());
      break;
    }
    state->views.emplace_back(source, state->scope->Var(view_names[i]));
  }
  return state;
}

Status OpHandleTasks::RefreshSliceViews(const SsaOp& op) {
  SliceState& state = *slices_[op.id];
  for (auto& [source, view] : state.views) {
    const Tensor* t = source->GetTensor();
    if (t == nullptr || !t->defined() || !t->initialized()) {
      continue;  // PreparedOp::Run names the empty input
    }
    int64_t begin = 0, end = 0;
    if (op.slice >= 0) {
      SliceRange(t->numel(), op.slice, op.num_slices, &begin, &end);
    }
    view->GetMutableTensor()->ViewElements(*t, begin, end);
  }
  return Status::Ok();
}

void OpHandleTasks::BeginStep(int64_t step) {
  for (auto& slot : fetched_) slot.assign(graph_->num_places(), Tensor());
  for (auto& slot : pending_) {
    for (PendingFetch& f : slot) f.data = nullptr;
  }
  for (auto& ctx : contexts_) {
    if (ctx != nullptr) ctx->SetStep(step);
  }
}

void OpHandleTasks::FinishFetches() {
  for (size_t slot = 0; slot < pending_.size(); ++slot) {
    // A replay reads what the captured step's copies wrote (TakeFetched
    // emptied the slots since).
    fetched_[slot].resize(pending_[slot].size());
    for (size_t p = 0; p < pending_[slot].size(); ++p) {
      const PendingFetch& f = pending_[slot][p];
      if (f.data == nullptr) continue;
      Tensor host(f.dtype, f.dims);
      if (host.bytes() > 0) std::memcpy(host.raw_data(), f.data, host.bytes());
      host.set_lod(f.lod);
      fetched_[slot][p] = std::move(host);
    }
  }
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
    case SsaOpKind::kComputation:
      return RunComputation(op);
    case SsaOpKind::kScaleLossGrad:
      return RunScaleLossGrad(op);
    case SsaOpKind::kFetch:
      return RunFetch(op);
    default:
      return RunCollective(op);
  }
}

Status OpHandleTasks::RunComputation(const SsaOp& op) {
  std::unique_ptr<PreparedOp>& prepared = prepared_[op.id];
  SliceState* slice = slices_[op.id].get();
  Status s;
  if (slice != nullptr) s = slice->error;
  if (s.ok() && prepared == nullptr) {
    const OpDesc* desc = &graph_->program().global_block().op(op.program_op);
    Scope* scope = (*exec_scopes_)[op.place];
    if (slice != nullptr) {
      scope = slice->scope;
      if (slice->desc != nullptr) desc = slice->desc.get();
    }
    StatusOr<std::unique_ptr<PreparedOp>> p =
        PreparedOp::Prepare(*desc, scope, contexts_[op.id].get());
    if (p.ok()) {
      prepared = std::move(*p);
    } else {
      s = p.status();
    }
  }
  if (s.ok() && slice != nullptr) s = RefreshSliceViews(op);
  if (s.ok() && op.sliced_reduce >= 0 && plans_[op.sliced_reduce] != nullptr &&
      !slice->sums_gradient) {
    // This slice's share of its gradient's reduce, then its update.
    const InProcessPlan& plan = *plans_[op.sliced_reduce];
    int64_t begin = 0, end = 0;
    SliceRange(plan.total_units(), op.slice, op.num_slices, &begin, &end);
    plan.RunUnits(begin, end);
  }
  if (s.ok() && prepared != nullptr) s = prepared->Run();
  if (s.ok()) return s;
  return Status(s.code(), "place " + graph_->places()[op.place].ToString() +
                              ": " + s.message());
}

Status OpHandleTasks::RunScaleLossGrad(const SsaOp& op) {
  const std::string& grad = graph_->var(op.outputs[0]).name;
  PAREX_ASSIGN_OR_RETURN(Tensor * loss,
                         PlaceTensor(op, graph_->loss_name, op.place));
  PAREX_ASSIGN_OR_RETURN(Tensor * out, PlaceTensor(op, grad, op.place));
  if (Status s = out->TryAllocate(loss->dtype(), loss->dims(), loss->place());
      !s.ok()) {
    return Status(s.code(), graph_->OpLabel(op.id) + ": var '" + grad +
                                "': " + s.message());
  }
  const int64_t n = out->numel();
  // On a device the value is made in a host buffer kept for this op and
  // copied in (a copy a CUDA graph can replay).
  void* fill = out->raw_data();
  if (devices_ != nullptr) {
    PAREX_ASSIGN_OR_RETURN(
        fill, devices_->HostBuffer(this, op.id, op.place, out->bytes()));
  }
  if (out->dtype() == DType::kFP32) {
    std::fill_n(static_cast<float*>(fill), n, static_cast<float>(op.scale));
  } else if (out->dtype() == DType::kFP64) {
    std::fill_n(static_cast<double*>(fill), n, op.scale);
  } else {
    return InvalidArgument(graph_->OpLabel(op.id) + ": the loss '" +
                           graph_->loss_name + "' is " +
                           DTypeName(out->dtype()) + ", not a float tensor");
  }
  if (devices_ != nullptr) {
    return devices_->compute(op.place)
        ->CopyFromHost(out->raw_data(), fill, out->bytes())
        .WithContext(graph_->OpLabel(op.id));
  }
  return Status::Ok();
}

Status OpHandleTasks::BindCollective(const SsaOp& op) {
  const int n = graph_->num_places();
  std::vector<PlaceTensors>& groups = groups_[op.id];
  groups.assign(op.var_names.size(), PlaceTensors(n));
  for (size_t i = 0; i < op.var_names.size(); ++i) {
    for (int p = 0; p < n; ++p) {
      PAREX_ASSIGN_OR_RETURN(groups[i][p], PlaceTensor(op, op.var_names[i], p));
    }
  }
  bound_[op.id] = 1;
  return Status::Ok();
}

int OpHandleTasks::SparsePlaces(const std::string& name) const {
  int sparse = 0;
  for (Scope* scope : *exec_scopes_) {
    const Variable* v = scope->FindVar(name);
    sparse += v != nullptr && v->IsSelectedRows();
  }
  return sparse;
}

Status OpHandleTasks::GatherSparseRows(const SsaOp& op, bool* done) {
  *done = false;
  const int n = graph_->num_places();
  const bool gathers = op.kind == SsaOpKind::kAllGather && in_process_;
  for (const std::string& name : op.var_names) {
    // The common case, dense everywhere, looks and allocates nothing more.
    const int sparse = SparsePlaces(name);
    if (sparse == 0) continue;
    std::vector<Variable*> vars(n);
    for (int p = 0; p < n; ++p) {
      vars[p] = (*exec_scopes_)[p]->FindVar(name);
      if (vars[p] == nullptr) {
        return Internal(graph_->OpLabel(op.id) + ": no variable '" + name +
                        "' on " + graph_->places()[p].ToString());
      }
    }
    bound_[op.id] = 0;  // the variables change what they hold
    const std::string what = graph_->OpLabel(op.id) + ": var '" + name + "'";
    // Rows everywhere gather as rows; otherwise dense sums, then the dense
    // collective (bound afresh).
    PAREX_RETURN_IF_ERROR(gathers && sparse == n
                              ? MergeRowsOnEveryPlace(vars, what)
                              : DensifyRows(vars, graph_->places(), what));
  }
  if (gathers) {
    // Done when every var was gathered as rows (none left dense to sum).
    bool all_rows = true;
    for (const std::string& name : op.var_names) {
      all_rows =
          all_rows && (*exec_scopes_)[0]->FindVar(name)->IsSelectedRows();
    }
    *done = all_rows;
  }
  return Status::Ok();
}

Status OpHandleTasks::ShapeBroadcastReceivers(const SsaOp& op) {
  const std::vector<PlaceTensors>& groups = groups_[op.id];
  const int root = op.root >= 0 ? op.root : 0;
  for (const PlaceTensors& group : groups) {
    const Tensor& src = *group[root];
    for (int p = 0; p < static_cast<int>(group.size()); ++p) {
      Tensor* dst = group[p];
      if (p == root ||
          (dst->dims() == src.dims() && dst->dtype() == src.dtype())) {
        continue;
      }
      Status s = dst->TryAllocate(src.dtype(), src.dims(), graph_->places()[p]);
      if (!s.ok()) {
        return Status(s.code(), graph_->OpLabel(op.id) + ": var '" +
                                    op.var_names[&group - groups.data()] +
                                    "': " + s.message());
      }
    }
  }
  return Status::Ok();
}

const std::string& OpHandleTasks::CallName(const SsaOp& op) {
  std::string& name = call_names_[op.id];
  if (!name.empty()) return name;
  if (op.type == "send" || op.type == "recv") {
    // Parameter-server sends and receives name every variable they move
    // (joined by '\n': PserverCommunicator finds their shards).
    for (const std::string& v : op.var_names) {
      name += (name.empty() ? "" : "\n") + v;
    }
  }
  if (name.empty()) {
    name = op.var_names.size() == 1 ? op.var_names[0] : graph_->OpLabel(op.id);
  }
  return name;
}

Status OpHandleTasks::RunCollective(const SsaOp& op) {
  if (op.rows) return RunRows(op);
  if (op.type == "prefetch") return RunPrefetch(op);
  // Only the collectives of gradients the multi-device pass found sparse
  // (lookup_table's is_sparse) can meet rows.
  if (maybe_sparse_[op.id]) {
    bool done = false;
    PAREX_RETURN_IF_ERROR(GatherSparseRows(op, &done));
    if (done) return Status::Ok();
  }
  if (!bound_[op.id]) PAREX_RETURN_IF_ERROR(BindCollective(op));
  const std::vector<PlaceTensors>& groups = groups_[op.id];
  const int root = op.root >= 0 ? op.root : 0;
  // The receivers take the root's shape.
  if (op.kind == SsaOpKind::kBroadcast) {
    PAREX_RETURN_IF_ERROR(ShapeBroadcastReceivers(op));
  }
  Communicator& comm = *comm_;
  const std::string& name = CallName(op);
  switch (op.kind) {
    case SsaOpKind::kAllReduce:
    case SsaOpKind::kFusedAllReduce:
    // The gradients parex produces are dense (lookup_table's included), so
    // the rows of a "sparse" gradient merge by this sum too.
    case SsaOpKind::kAllGather:
      return comm.AllReduce(name, groups);
    case SsaOpKind::kReduce:
      if (op.num_slices > 0 && in_process_ != nullptr) {
        // The slices sum their ranges (RunComputation); this lays it out.
        if (plans_[op.id] == nullptr) {
          plans_[op.id] = std::make_unique<InProcessPlan>();
        }
        return in_process_->Prepare(Collective::kReduce, name, groups, root,
                                    nullptr, plans_[op.id].get());
      }
      return comm.Reduce(name, groups, root);
    case SsaOpKind::kBroadcast:
      return comm.Broadcast(name, groups, root);
    default:
      return Internal(graph_->OpLabel(op.id) + ": not a collective");
  }
}

Status OpHandleTasks::RunRows(const SsaOp& op) {
  const int n = graph_->num_places();
  std::vector<Variable*> vars(n);
  for (int p = 0; p < n; ++p) {
    vars[p] = (*exec_scopes_)[p]->FindVar(op.var_names[0]);
    if (vars[p] == nullptr) {
      return Internal(graph_->OpLabel(op.id) + ": no variable '" +
                      op.var_names[0] + "' on " +
                      graph_->places()[p].ToString());
    }
  }
  return (op.kind == SsaOpKind::kReduce
              ? comm_->ReduceRows(op.var_names[0], vars)
              : comm_->BroadcastRows(op.var_names[0], vars))
      .WithContext(graph_->OpLabel(op.id));
}

Status OpHandleTasks::RunPrefetch(const SsaOp& op) {
  const int n = graph_->num_places();
  std::vector<Variable*> tables(n);
  std::vector<std::vector<const Tensor*>> ids(op.var_names.size() > 1 ? n : 0);
  for (int p = 0; p < n; ++p) {
    if (!graph_->places()[p].is_cpu()) {
      return Unimplemented(graph_->OpLabel(op.id) + ": a prefetched table on " +
                           graph_->places()[p].ToString() +
                           "; prefetch runs on CPU places");
    }
    Scope* scope = (*exec_scopes_)[p];
    tables[p] = scope->FindVar(op.var_names[0]);
    if (tables[p] == nullptr) tables[p] = scope->Var(op.var_names[0]);
    for (size_t i = 1; i < op.var_names.size(); ++i) {
      const Variable* v = scope->FindVar(op.var_names[i]);
      const Tensor* t = v != nullptr ? v->GetTensor() : nullptr;
      if (t == nullptr) {
        return NotFound(graph_->OpLabel(op.id) + ": ids '" + op.var_names[i] +
                        "' hold no tensor on " +
                        graph_->places()[p].ToString());
      }
      ids[p].push_back(t);
    }
  }
  return comm_->Prefetch(op.var_names[0], ids, tables)
      .WithContext(graph_->OpLabel(op.id));
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
    if (devices_ != nullptr) {
      // Queued into a kept host buffer; FinishFetches reads it after the
      // step (no wait here, so a CUDA graph can capture the copy).
      const int slot_index = fetch_slot_[op.id];
      PAREX_ASSIGN_OR_RETURN(void* buffer,
                             devices_->HostBuffer(this, op.id, p, t->bytes()));
      PAREX_RETURN_IF_ERROR(devices_->fetch()
                                ->CopyToHost(buffer, t->raw_data(), t->bytes())
                                .WithContext(graph_->OpLabel(op.id)));
      pending_[slot_index][p] = {buffer, t->dtype(), t->dims(), t->lod()};
    } else {
      slot[p] = t->Clone();
    }
  }
  return Status::Ok();
}

StatusOr<Tensor> ConcatAlongDim0(const std::vector<Tensor>& parts) {
  if (parts.empty() || !parts[0].defined()) return Tensor();  // dry run
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
