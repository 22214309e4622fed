#include "actors/comm/collective_checks.h"

namespace parex {

std::string CollectiveLabel(Collective collective, std::string_view name,
                            size_t num_groups, size_t group) {
  std::string s =
      std::string(CollectiveName(collective)) + " '" + std::string(name) + "'";
  if (num_groups > 1) s += " group " + std::to_string(group);
  return s;
}

Status CheckPlaceTensors(Collective collective, std::string_view name,
                         TensorGroups groups,
                         const std::vector<Place>& places) {
  for (size_t g = 0; g < groups.size(); ++g) {
    const PlaceTensors& tensors = groups[g];
    const std::string label =
        CollectiveLabel(collective, name, groups.size(), g);
    if (tensors.size() != places.size()) {
      return InvalidArgument(label + ": " + std::to_string(tensors.size()) +
                             " tensors for " + std::to_string(places.size()) +
                             " places");
    }
    for (size_t p = 0; p < tensors.size(); ++p) {
      const Tensor* t = tensors[p];
      const std::string where = label + " place " + places[p].ToString();
      if (t == nullptr || !t->defined() || !t->initialized()) {
        return InvalidArgument(where + ": no tensor holding data");
      }
      if (t->dtype() != tensors[0]->dtype() ||
          t->numel() != tensors[0]->numel()) {
        return InvalidArgument(where + ": " + t->DebugString() +
                               " != " + tensors[0]->DebugString() + " of " +
                               places[0].ToString());
      }
    }
  }
  return Status::Ok();
}

}  // namespace parex
