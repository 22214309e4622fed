// Making a ParallelExecutor (parallel_executor.h): the places checked (or
// CPU_NUM's), the communicator for them, each place's scopes and its copies
// of the persistables, and the first compile, which validates the program.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actors/comm/device_communicators.h"
#include "actors/comm/in_device_communicator.h"
#include "actors/comm/in_process_communicator.h"
#include "actors/executor/device_places.h"
#include "actors/executor/executor_impl.h"
#include "actors/executor/parallel_executor.h"
#include "base/config.h"
#include "base/logging.h"
#include "kernels/visible_devices.h"

namespace parex {

Status ParallelExecutor::CheckPlaces(const std::vector<Place>& places) {
  for (size_t i = 0; i < places.size(); ++i) {
    if (places[i].kind != places[0].kind) {
      return InvalidArgument("places " + places[0].ToString() + " and " +
                             places[i].ToString() +
                             " are of different kinds (a program runs on "
                             "places of one kind)");
    }
    for (size_t j = 0; j < i; ++j) {
      if (places[i] == places[j]) {
        return InvalidArgument("place " + places[i].ToString() +
                               " is listed twice");
      }
    }
  }
  PAREX_RETURN_IF_ERROR(CheckPlacesVisible(places));
  return CheckDevicesOfPlaces(places);
}

namespace {

// No places: CPU_NUM CPU places (Fluid's default), at least one.
std::vector<Place> DefaultPlaces() {
  long cpu_num = GetConfigInt("CPU_NUM");
  if (cpu_num <= 0) {
    LogWarn(Subsystem::kActor, "CPU_NUM is not a positive number; using 1");
    cpu_num = 1;
  }
  std::vector<Place> places;
  for (long i = 0; i < cpu_num; ++i) places.push_back(Place::CPU(i));
  return places;
}

// A given communicator serves these places; share_vars_from runs on them.
Status CheckPartners(const std::vector<Place>& places, bool on_devices,
                     const ExecutionStrategy& exec,
                     const ParallelExecutor* share_vars_from) {
  if (exec.communicator != nullptr &&
      exec.communicator->local_size() != static_cast<int>(places.size())) {
    return InvalidArgument("ParallelExecutor: the communicator serves " +
                           std::to_string(exec.communicator->local_size()) +
                           " local places, not the " +
                           std::to_string(places.size()) + " places");
  }
  if (share_vars_from != nullptr && share_vars_from->places() != places) {
    return InvalidArgument(
        "ParallelExecutor: share_vars_from runs on other places");
  }
  if (on_devices && exec.communicator != nullptr) {
    // Gloo and the in-process backend read host memory.
    return Unimplemented(
        "ParallelExecutor: places " + places[0].ToString() +
        ": collectives of GPU places across nodes need the NCCL "
        "communicator, which is not wired into the runtime yet (train "
        "across nodes on cpu places)");
  }
  return Status::Ok();
}

}  // namespace

Status ParallelExecutor::Impl::MakeCommunicator(bool on_devices) {
  if (exec.communicator != nullptr) {
    comm = exec.communicator;
  } else if (on_devices && OnSeveralDevices(places)) {
    std::vector<DeviceContext*> streams;
    for (int p = 0; p < n(); ++p) streams.push_back(devices->communication(p));
    PAREX_ASSIGN_OR_RETURN(comm, CreateDeviceCommunicator(places, streams));
  } else if (on_devices) {
    comm = std::make_shared<InDeviceCommunicator>(device_places,
                                                  devices->communication());
  } else {
    comm = std::make_shared<InProcessCommunicator>(device_places);
  }
  return Status::Ok();
}

void ParallelExecutor::Impl::MakeScopes(
    const ParallelExecutor* share_vars_from) {
  local.resize(n());
  holder.resize(n());
  exec_scopes.assign(n(), nullptr);
  for (int p = 0; p < n(); ++p) {
    Scope* parent =
        share_vars_from != nullptr ? share_vars_from->local_scope(p) : scope;
    parents.push_back(parent);
    local[p] = parent->NewScope();
    holder[p] = local[p]->NewScope();
  }
}

StatusOr<std::unique_ptr<ParallelExecutor>> ParallelExecutor::Create(
    std::vector<Place> places, const Program& main_program,
    const std::string& loss_name, Scope* scope,
    const BuildStrategy& build_strategy, const ExecutionStrategy& exec_strategy,
    const ParallelExecutor* share_vars_from) {
  if (scope == nullptr) return InvalidArgument("ParallelExecutor: no scope");
  if (places.empty()) places = DefaultPlaces();
  PAREX_RETURN_IF_ERROR(CheckPlaces(places).WithContext("ParallelExecutor"));
  // Places with memory of their own: cuda, or cpu when the tests ask.
  const bool on_devices = places[0].is_cuda() ||
                          (places[0].is_cpu() && exec_strategy.device_streams);
  PAREX_RETURN_IF_ERROR(
      CheckPartners(places, on_devices, exec_strategy, share_vars_from));
  auto impl = std::make_unique<Impl>();
  impl->places = places;
  for (const Place& p : places) {
    // A simulated place stands as the CPU place of its id (host memory).
    impl->device_places.push_back(p.is_sim() ? Place::CPU(p.id) : p);
  }
  impl->exec = exec_strategy;
  if (on_devices) {
    PAREX_ASSIGN_OR_RETURN(impl->devices, DevicePlaces::Create(places));
  }
  PAREX_RETURN_IF_ERROR(impl->MakeCommunicator(on_devices));
  impl->program = main_program;
  impl->loss_name = loss_name;
  impl->scope = scope;
  impl->build = build_strategy;
  // Every device place holds its own parameters (the graph then
  // broadcasts Reduce mode's updated ones).
  if (on_devices) impl->build.share_cpu_parameters = false;
  // Fluid's CPU default is 2 x places because its op threads may block;
  // parex's kernels never block a worker (blocking work goes to detached
  // actors), so more workers than cores only adds switching.
  impl->num_threads =
      exec_strategy.num_threads > 0
          ? exec_strategy.num_threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Local scopes: place 0 uses the caller's persistables; the others get
  // copies (sorted names), or share them (SharedPersistables; a test
  // executor reads its trainer's). Device places all get copies on their
  // device, place 0 too.
  std::vector<std::string> persistables;
  const std::set<std::string> shared = SharedPersistables(
      main_program,
      impl->build.reduce == BuildStrategy::ReduceStrategy::kReduce &&
          impl->build.share_cpu_parameters,
      on_devices, &persistables);
  impl->MakeScopes(share_vars_from);
  auto executor =
      std::unique_ptr<ParallelExecutor>(new ParallelExecutor(std::move(impl)));
  // (The executor owns the scopes now: an error below deletes them.)
  Impl& made = *executor->impl_;
  for (int p = 0; p < made.n() && share_vars_from == nullptr; ++p) {
    if (p == 0 && !on_devices) continue;
    PAREX_RETURN_IF_ERROR(CopyPersistables(
        *scope, persistables, shared, made.local[p], made.devices.get(), p));
  }
  // Build (and validate) the graph without fetches now, so a bad program
  // fails here rather than at the first Run.
  PAREX_ASSIGN_OR_RETURN(CompiledStep * first, made.Compile({}));
  (void)first;
  return executor;
}

}  // namespace parex
