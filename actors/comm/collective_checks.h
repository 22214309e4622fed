// Checks every communicator backend makes before a collective touches data,
// with the messages communicator.h promises (collective, variable, place).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "actors/comm/communicator.h"

namespace parex {

// "all_reduce 'w@GRAD'", with " group 2" when a bucket has several groups.
std::string CollectiveLabel(Collective collective, std::string_view name,
                            size_t num_groups, size_t group);

// Every group has one tensor per place of `places`, each holding data, of
// the dtype and element count of the group's first tensor.
Status CheckPlaceTensors(Collective collective, std::string_view name,
                         TensorGroups groups, const std::vector<Place>& places);

}  // namespace parex
