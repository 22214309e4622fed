#include "actors/comm/in_device_communicator.h"

#include "actors/comm/collective_checks.h"
#include "kernels/op_runner.h"

namespace parex {
namespace {

std::string XName(int i) { return "x_" + std::to_string(i); }

}  // namespace

InDeviceCommunicator::InDeviceCommunicator(std::vector<Place> places,
                                           DeviceContext* context)
    : places_(std::move(places)), context_(context) {
  const int n = world_size();
  std::vector<std::string> xs;
  for (int i = 0; i < n; ++i) {
    xs.push_back(XName(i));
    scope_.Var(xs.back());
  }
  scope_.Var("out");
  Block& block = program_.global_block();
  sum_into_out_ = block.AppendOp("sum");
  sum_into_out_->SetInput("X", xs);
  sum_into_out_->SetOutput("Out", {"out"});
  sum_into_x0_ = block.AppendOp("sum");
  sum_into_x0_->SetInput("X", xs);
  sum_into_x0_->SetOutput("Out", {xs[0]});
}

Status InDeviceCommunicator::Sum(const PlaceTensors& tensors, Tensor* out) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    *scope_.FindVar(XName(static_cast<int>(i)))->GetMutableTensor() =
        *tensors[i];
  }
  const bool in_place = out == tensors[0];
  if (!in_place) *scope_.FindVar("out")->GetMutableTensor() = *out;
  Status s =
      RunOp(in_place ? *sum_into_x0_ : *sum_into_out_, &scope_, context_);
  // Let go of the shared buffers: the scope must not keep them alive.
  for (size_t i = 0; i < tensors.size(); ++i) {
    *scope_.FindVar(XName(static_cast<int>(i)))->GetMutableTensor() = Tensor();
  }
  *scope_.FindVar("out")->GetMutableTensor() = Tensor();
  return s;
}

Status InDeviceCommunicator::CopyFrom(const PlaceTensors& tensors, int root) {
  const Tensor* src = tensors[root];
  for (size_t p = 0; p < tensors.size(); ++p) {
    if (static_cast<int>(p) == root ||
        tensors[p]->raw_data() == src->raw_data())
      continue;
    PAREX_RETURN_IF_ERROR(context_->CopyOnDevice(
        tensors[p]->raw_data(), src->raw_data(), src->bytes()));
  }
  return Status::Ok();
}

Status InDeviceCommunicator::AllReduce(std::string_view name,
                                       TensorGroups groups) {
  PAREX_RETURN_IF_ERROR(
      CheckPlaceTensors(Collective::kAllReduce, name, groups, places_));
  for (size_t g = 0; g < groups.size(); ++g) {
    const PlaceTensors& tensors = groups[g];
    if (tensors.size() == 1) continue;  // one place: already the sum
    // One pass where the device has it; else the sum op, then copies.
    sum_inputs_.clear();
    sum_outputs_.clear();
    for (Tensor* t : tensors) {
      sum_inputs_.push_back(t->raw_data());
      sum_outputs_.push_back(t->raw_data());
    }
    Status s = context_->SumToAll(sum_inputs_, sum_outputs_,
                                  tensors[0]->dtype(), tensors[0]->numel());
    if (s.code() == StatusCode::kUnimplemented) {
      s = Sum(tensors, tensors[0]);
      if (s.ok()) s = CopyFrom(tensors, 0);
    }
    if (!s.ok()) {
      return s.WithContext(
          CollectiveLabel(Collective::kAllReduce, name, groups.size(), g));
    }
  }
  return Status::Ok();
}

Status InDeviceCommunicator::Reduce(std::string_view name, TensorGroups groups,
                                    int root) {
  PAREX_RETURN_IF_ERROR(
      CheckPlaceTensors(Collective::kReduce, name, groups, places_));
  if (root < 0 || root >= world_size()) {
    return InvalidArgument(CollectiveLabel(Collective::kReduce, name, 1, 0) +
                           ": root " + std::to_string(root) + " is not a rank");
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const PlaceTensors& tensors = groups[g];
    Status s;
    if (root == 0) {
      s = Sum(tensors, tensors[0]);
    } else {
      // Summing into x_root in place would add it first; keep rank order
      // through a scratch tensor, then copy.
      Tensor* target = tensors[root];
      s = scratch_.TryAllocate(target->dtype(), target->dims(),
                               target->place());
      if (s.ok()) s = Sum(tensors, &scratch_);
      if (s.ok()) {
        s = context_->CopyOnDevice(target->raw_data(), scratch_.raw_data(),
                                   target->bytes());
      }
    }
    if (!s.ok()) {
      return s.WithContext(
          CollectiveLabel(Collective::kReduce, name, groups.size(), g));
    }
  }
  return Status::Ok();
}

Status InDeviceCommunicator::Broadcast(std::string_view name,
                                       TensorGroups groups, int root) {
  PAREX_RETURN_IF_ERROR(
      CheckPlaceTensors(Collective::kBroadcast, name, groups, places_));
  if (root < 0 || root >= world_size()) {
    return InvalidArgument(CollectiveLabel(Collective::kBroadcast, name, 1, 0) +
                           ": root " + std::to_string(root) + " is not a rank");
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    Status s = CopyFrom(groups[g], root);
    if (!s.ok()) {
      return s.WithContext(
          CollectiveLabel(Collective::kBroadcast, name, groups.size(), g));
    }
  }
  return Status::Ok();
}

Status InDeviceCommunicator::AllGather(std::string_view name,
                                       const PlaceTensors& inputs,
                                       const PlaceTensors& outputs) {
  (void)inputs;
  (void)outputs;
  return Unimplemented("all_gather '" + std::string(name) +
                       "': the in-device communicator does not gather "
                       "sparse gradients yet (use dense gradients: "
                       "is_sparse=False)");
}

}  // namespace parex
