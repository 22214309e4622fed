#include "actors/comm/hierarchical_communicator.h"

#include <utility>

#include "base/check.h"

namespace parex {

HierarchicalCommunicator::HierarchicalCommunicator(
    std::vector<Place> local_places, std::shared_ptr<Communicator> cross,
    int world_size, int first_local_rank)
    : local_(std::move(local_places)),
      cross_(std::move(cross)),
      world_size_(world_size),
      first_local_rank_(first_local_rank) {
  PAREX_CHECK(cross_ != nullptr && cross_->local_size() == 1);
  backend_ = std::string("in_process+") + cross_->backend();
}

Place HierarchicalCommunicator::place(int rank) const {
  const int local = rank - first_local_rank_;
  if (local >= 0 && local < local_.world_size()) return local_.place(local);
  return Place::CPU(rank);
}

Status HierarchicalCommunicator::ReduceThenCross(std::string_view name,
                                                 TensorGroups groups,
                                                 int root) {
  if (root < 0 || root >= local_size()) {
    return InvalidArgument("reduce '" + std::string(name) + "': root place " +
                           std::to_string(root) +
                           " is not one of this node's " +
                           std::to_string(local_size()));
  }
  if (local_size() > 1) {
    PAREX_RETURN_IF_ERROR(local_.Reduce(name, groups, root));
  }
  if (cross_->world_size() == 1) return Status::Ok();
  root_groups_.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    root_groups_[g].resize(1);
    root_groups_[g][0] = groups[g][root];
  }
  return cross_->AllReduce(name, root_groups_);
}

Status HierarchicalCommunicator::AllReduce(std::string_view name,
                                           TensorGroups groups) {
  PAREX_RETURN_IF_ERROR(ReduceThenCross(name, groups, 0));
  if (local_size() > 1) return local_.Broadcast(name, groups, 0);
  return Status::Ok();
}

Status HierarchicalCommunicator::Reduce(std::string_view name,
                                        TensorGroups groups, int root) {
  return ReduceThenCross(name, groups, root);
}

Status HierarchicalCommunicator::Broadcast(std::string_view name,
                                           TensorGroups groups, int root) {
  if (local_size() == 1) return Status::Ok();
  return local_.Broadcast(name, groups, root);
}

Status HierarchicalCommunicator::AllGather(std::string_view name,
                                           const PlaceTensors& inputs,
                                           const PlaceTensors& outputs) {
  if (cross_->world_size() == 1) return local_.AllGather(name, inputs, outputs);
  return Unimplemented(
      "all_gather '" + std::string(name) +
      "' across nodes: not supported (dense gradients are all-reduced)");
}

}  // namespace parex
