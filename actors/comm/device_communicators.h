// The communicator of places on several devices of one kind (GPUs: NCCL),
// registered by the library that implements it, so that the executor needs
// no device library to be built: `parex` registers NCCL at start
// (RegisterNcclCommunicator, nccl_communicator.h) when it is built with
// CUDA.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "actors/comm/communicator.h"
#include "kernels/device_context.h"

namespace parex {

// One rank per place; `streams[i]` is where rank i's work is queued (the
// communication stream of places[i]'s device), streams[0] where a call
// starts and ends.
using DeviceCommunicatorFactory =
    std::function<StatusOr<std::shared_ptr<Communicator>>(
        const std::vector<Place>& places,
        const std::vector<DeviceContext*>& streams)>;

// Thread-safe; a later registration for `kind` replaces the earlier one.
void RegisterDeviceCommunicator(Place::Kind kind,
                                DeviceCommunicatorFactory factory);
// Whether a factory is registered for `kind`.
bool HasDeviceCommunicator(Place::Kind kind);
// The registered factory's communicator for places[0]'s kind, or
// Unimplemented naming the places when none is registered.
StatusOr<std::shared_ptr<Communicator>> CreateDeviceCommunicator(
    const std::vector<Place>& places,
    const std::vector<DeviceContext*>& streams);

}  // namespace parex
