// ParallelExecutor's persistables: onto every place at creation
// (CopyPersistables), back to the caller's scope (SyncPersistables), and a
// value set on every place between steps (SetOnPlaces).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "actors/executor/executor_impl.h"
#include "graph/ir/op_role.h"

namespace parex {

// The persistables places share rather than copy (and every persistable
// tensor of block 0, sorted, in *persistables). With `share_params`
// (Reduce mode's shared parameters): the trained parameters, whose
// gradients the graph merges and whose one update the owner makes
// (SsaGraph::IsSharedStorage); other persistables, batch norm's running
// statistics included (Paddle makes them untrained parameters), are
// written by every place: each has its own copy. On CPU places also every
// persistable no op of the program writes (an inference program's
// parameters, a learning rate set between steps): one copy, read by all.
std::set<std::string> SharedPersistables(
    const Program& program, bool share_params, bool on_devices,
    std::vector<std::string>* persistables) {
  std::set<std::string> shared;
  const Block& block = program.global_block();
  for (const auto& var : block.vars()) {
    if (var->persistable() && var->is_tensor()) {
      persistables->push_back(var->name());
    }
  }
  std::sort(persistables->begin(), persistables->end());
  if (share_params) {
    for (const auto& op : block.ops()) {
      if ((OpRole(*op) & kOpRoleBackward) == 0) continue;
      const std::vector<std::string> role_var = OpRoleVar(*op);
      for (size_t k = 0; k + 1 < role_var.size(); k += 2) {
        shared.insert(role_var[k]);
      }
    }
  }
  if (on_devices) return shared;
  const std::unordered_set<std::string> written = VarsWrittenByOps(program);
  for (const std::string& name : *persistables) {
    if (written.count(name) == 0) shared.insert(name);
  }
  return shared;
}

// Place p's copies of the initialised persistables of `scope` (sorted
// names), in its local scope `local`: plain copies on the host, or copies
// onto the place's device. `skip`: names the places share (no copy).
Status CopyPersistables(const Scope& scope,
                        const std::vector<std::string>& persistables,
                        const std::set<std::string>& skip, Scope* local,
                        const DevicePlaces* devices, int p) {
  for (const std::string& name : persistables) {
    const Variable* src = scope.FindVar(name);
    if (src == nullptr || src->GetTensor() == nullptr) {
      continue;  // not initialised: the program's ops must write it first
    }
    if (skip.count(name) != 0) continue;
    Tensor* dst = local->Var(name)->GetMutableTensor();
    if (devices == nullptr) {
      *dst = src->GetTensor()->Clone();
      continue;
    }
    if (!src->GetTensor()->defined()) continue;  // the place's own, unset
    PAREX_RETURN_IF_ERROR(devices->CopyIn(p, *src->GetTensor(), dst)
                              .WithContext("persistable '" + name + "'"));
  }
  return devices != nullptr ? devices->compute(p)->Synchronize() : Status::Ok();
}

Status ParallelExecutor::SyncPersistables() {
  // The places each var is written on, by any op handle (computation,
  // collective, an optimizer finishing its slices) of the graph run last.
  const SsaGraph& g = graph();
  std::map<std::string, std::set<int>> written_on;
  for (const SsaOp& op : g.ops()) {
    for (int v : op.outputs) {
      const SsaVar& var = g.var(v);
      if (!var.is_control()) written_on[var.name].insert(var.place);
    }
  }
  const DevicePlaces* devices = impl_->devices.get();
  for (const auto& var : impl_->program.global_block().vars()) {
    if (!var->persistable() || !var->is_tensor()) continue;
    auto it = written_on.find(var->name());
    if (it == written_on.end()) continue;
    // On the host, place 0 writes the caller's own tensor.
    if (devices == nullptr && it->second.count(0) != 0) continue;
    const int from = *it->second.begin();  // 0 when place 0 writes it
    const Variable* src = impl_->local[from]->FindVar(var->name());
    Variable* dst = impl_->scope->FindVar(var->name());
    if (src == nullptr || dst == nullptr || src == dst ||
        src->GetTensor() == nullptr || !src->GetTensor()->defined()) {
      continue;  // shared storage (one buffer), or never written
    }
    if (devices == nullptr) {
      *dst->GetMutableTensor() = src->GetTensor()->Clone();
      continue;
    }
    StatusOr<Tensor> host =
        DevicePlaces::CopyOut(devices->compute(from), *src->GetTensor());
    if (!host.ok()) {
      return host.status().WithContext("persistable '" + var->name() + "' on " +
                                       impl_->places[from].ToString());
    }
    *dst->GetMutableTensor() = std::move(host).value();
  }
  return Status::Ok();
}

Status ParallelExecutor::SetOnPlaces(const std::string& name,
                                     const Tensor& value) {
  // The caller's copy too: on the host it is place 0's, and it is what a
  // checkpoint reads.
  std::vector<Tensor*> targets;
  if (Variable* v = impl_->scope->FindVar(name)) {
    targets.push_back(v->GetMutableTensor());
  }
  for (int p = 0; p < impl_->n(); ++p) {
    Variable* v = impl_->local[p]->FindVar(name);
    Tensor* t = v != nullptr ? v->GetMutableTensor() : nullptr;
    if (t == nullptr || !t->defined() || t->numel() != value.numel() ||
        t->dtype() != value.dtype()) {
      return InvalidArgument("'" + name + "' on " +
                             impl_->places[p].ToString() + " is " +
                             (t ? t->DebugString() : std::string("missing")) +
                             ", not " + value.DebugString());
    }
    if (impl_->devices == nullptr || !impl_->local[p]->FindLocalVar(name)) {
      targets.push_back(t);  // host memory (place 0's is the caller's)
      continue;
    }
    PAREX_RETURN_IF_ERROR(
        impl_->devices->CopyIn(p, value, t)
            .WithContext("'" + name + "' on " + impl_->places[p].ToString()));
    PAREX_RETURN_IF_ERROR(impl_->devices->compute(p)->Synchronize());
  }
  for (Tensor* t : targets) {
    if (t->numel() == value.numel() && t->dtype() == value.dtype() &&
        t->place().is_cpu()) {
      std::memcpy(t->raw_data(), value.raw_data(), value.bytes());
    }
  }
  return Status::Ok();
}

}  // namespace parex
