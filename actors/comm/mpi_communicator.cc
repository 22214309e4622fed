#include "actors/comm/mpi_communicator.h"

#include <mpi.h>

#include <cstdlib>
#include <map>
#include <utility>

#include "actors/comm/cross_node_calls.h"
#include "base/config.h"

namespace parex {
namespace {

// An environment variable as a whole number n with 1 <= n + offset <= limit
// (a rank: offset 1), or -1 when unset or not one.
long Number(const char* var, long offset, long limit) {
  if (!ConfigIsSet(var)) return -1;
  const std::string text = GetConfig(var);
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n + offset < 1 || n + offset > limit) {
    return -1;
  }
  return n;
}

// A rank and size from two environment variables, when both are numbers.
std::optional<MpirunRank> FromEnvironment(const char* rank_var,
                                          const char* size_var) {
  const long size = Number(size_var, 0, 1 << 20);
  const long rank = size < 1 ? -1 : Number(rank_var, 1, size);
  if (size < 1 || rank < 0) return std::nullopt;
  return MpirunRank{static_cast<int>(rank), static_cast<int>(size)};
}

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// MPI once per process, at MPI_THREAD_SERIALIZED (the communicators keep
// their calls one at a time); finalized at exit.
Status InitializeOnce() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    return FailedPrecondition("MPI was finalized already in this process");
  }
  if (initialized) return Status::Ok();
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) !=
      MPI_SUCCESS) {
    return IoError("MPI_Init_thread failed");
  }
  std::atexit(FinalizeAtExit);
  if (provided < MPI_THREAD_SERIALIZED) {
    return FailedPrecondition(
        "this MPI gives threads level " + std::to_string(provided) +
        "; parex calls it from two threads (MPI_THREAD_SERIALIZED)");
  }
  return Status::Ok();
}

// The summable dtypes (CheckSummable let only these through).
MPI_Datatype SumType(DType dtype) {
  switch (dtype) {
    case DType::kFP32:
      return MPI_FLOAT;
    case DType::kFP64:
      return MPI_DOUBLE;
    case DType::kInt32:
      return MPI_INT32_T;
    default:
      return MPI_INT64_T;
  }
}

// Bytes moved as unsigned integers of the element's size, so that a count
// of elements (at most 2^31 - 1) is the call's count.
MPI_Datatype BytesType(size_t element_size) {
  switch (element_size) {
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    case 8:
      return MPI_UINT64_T;
    default:
      return MPI_BYTE;
  }
}

}  // namespace

std::optional<MpirunRank> StartedByMpirun() {
  std::optional<MpirunRank> r =
      FromEnvironment("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  if (!r.has_value()) r = FromEnvironment("PMI_RANK", "PMI_SIZE");
  if (!r.has_value()) return r;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const long n = Number(var, 0, r->size);
    if (n >= 1) {
      r->local_size = static_cast<int>(n);
      break;
    }
  }
  return r;
}

struct MpiCommunicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
  // Each fused all-reduce's or reduce's memory, by name (cross_node_calls.h).
  std::map<std::string, Tensor, std::less<>> staging;
  Tensor broadcast_staging;  // a fused broadcast's groups, end to end
};

StatusOr<std::shared_ptr<MpiCommunicator>> MpiCommunicator::Connect(
    int rank, int size, std::vector<std::string> rank_names) {
  const std::string self = rank < static_cast<int>(rank_names.size())
                               ? rank_names[rank]
                               : "rank " + std::to_string(rank);
  const std::string how = "start the nodes with `mpirun -np " +
                          std::to_string(size) +
                          " parex node --topology FILE ...` (each process is "
                          "the topology's node of its rank)";
  const std::optional<MpirunRank> started = StartedByMpirun();
  if (!started.has_value()) {
    return FailedPrecondition(self +
                              ": the topology's collective is MPI, and this "
                              "process was not started by mpirun: " +
                              how);
  }
  if (started->rank != rank || started->size != size) {
    return FailedPrecondition(self + " is rank " + std::to_string(rank) +
                              " of " + std::to_string(size) +
                              " in the topology, but mpirun started it as " +
                              "rank " + std::to_string(started->rank) + " of " +
                              std::to_string(started->size) + ": " + how);
  }
  PAREX_RETURN_IF_ERROR(InitializeOnce().WithContext(self));
  int world_rank = -1;
  int world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_rank != rank || world_size != size) {
    return FailedPrecondition(
        self + ": MPI says rank " + std::to_string(world_rank) + " of " +
        std::to_string(world_size) + ", the topology " + std::to_string(rank) +
        " of " + std::to_string(size) + ": " + how);
  }
  std::shared_ptr<MpiCommunicator> comm(new MpiCommunicator());
  comm->state_ = std::make_unique<State>();
  comm->rank_ = rank;
  comm->size_ = size;
  comm->rank_names_ = std::move(rank_names);
  // A communicator of its own, whose errors come back as codes.
  if (MPI_Comm_dup(MPI_COMM_WORLD, &comm->state_->comm) != MPI_SUCCESS) {
    return IoError(self + ": MPI_Comm_dup failed");
  }
  MPI_Comm_set_errhandler(comm->state_->comm, MPI_ERRORS_RETURN);
  return comm;
}

// The communicator is left to MPI_Finalize (freeing it is collective in
// MPI's terms: a node ending on an error must not wait for its peers).
MpiCommunicator::~MpiCommunicator() = default;

void MpiCommunicator::Interrupt(const Status& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (interrupted_.ok()) interrupted_ = reason;
  stopped_.store(true, std::memory_order_release);
}

void MpiCommunicator::Resume() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = Status::Ok();
  stopped_.store(!broken_.ok(), std::memory_order_release);
}

Status MpiCommunicator::Run(Collective collective, std::string_view name,
                            TensorGroups groups, int root) {
  std::lock_guard<std::mutex> call(call_mu_);
  const int64_t seq = ++seq_;  // the same numbers on every rank
  if (stopped_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!interrupted_.ok()) return interrupted_;
    if (!broken_.ok()) return broken_;
  }
  return Observed(observer_, seq, collective, name,
                  [&] { return RunCall(collective, name, groups, root); });
}

Status MpiCommunicator::RunCall(Collective collective, std::string_view name,
                                TensorGroups groups, int root) {
  PAREX_ASSIGN_OR_RETURN(
      const CrossCall call,
      CheckCrossCall(collective, name, groups, root, size_, "MPI"));
  if (call.count == 0) return Status::Ok();  // every rank passes the same
  const int count = static_cast<int>(call.count);
  MPI_Comm comm = state_->comm;
  if (collective == Collective::kBroadcast) {
    const size_t element = SizeOf(call.dtype);
    if (groups.size() == 1) {
      const int rc = MPI_Bcast(groups[0][0]->raw_data(), count,
                               BytesType(element), root, comm);
      return rc == MPI_SUCCESS ? Status::Ok() : Failed(collective, name, rc);
    }
    Tensor& staging = state_->broadcast_staging;
    PAREX_RETURN_IF_ERROR(
        staging.TryAllocate(call.dtype, {call.count})
            .WithContext("broadcast '" + std::string(name) + "' across nodes"));
    PAREX_RETURN_IF_ERROR(
        StageIn(collective, name, groups, staging, false).status());
    const int rc =
        MPI_Bcast(staging.raw_data(), count, BytesType(element), root, comm);
    if (rc != MPI_SUCCESS) return Failed(collective, name, rc);
    StageOut(groups, staging, false);
    return Status::Ok();
  }
  PAREX_RETURN_IF_ERROR(CheckSummable(collective, name, call.dtype));
  const MPI_Datatype type = SumType(call.dtype);
  if (collective == Collective::kAllReduce && groups.size() == 1) {
    const int rc = MPI_Allreduce(MPI_IN_PLACE, groups[0][0]->raw_data(), count,
                                 type, MPI_SUM, comm);
    return rc == MPI_SUCCESS ? Status::Ok() : Failed(collective, name, rc);
  }
  // A fused bucket (or a reduce, whose non-roots keep their values): the
  // name's staging memory, made again when its dtype, size or place changed
  // (every rank sees the same change at the same call).
  const Place place = groups[0][0]->place();
  auto it = state_->staging.find(name);
  if (it == state_->staging.end() || it->second.dtype() != call.dtype ||
      it->second.numel() != call.count || it->second.place() != place) {
    Tensor fresh;
    PAREX_RETURN_IF_ERROR(
        fresh.TryAllocate(call.dtype, {call.count}, place)
            .WithContext(std::string(CollectiveName(collective)) + " '" +
                         std::string(name) + "' across nodes"));
    it = state_->staging.insert_or_assign(std::string(name), std::move(fresh))
             .first;
  }
  Tensor& staging = it->second;
  const bool alias = collective == Collective::kAllReduce;
  PAREX_ASSIGN_OR_RETURN(const bool in_place,
                         StageIn(collective, name, groups, staging, alias));
  const int rc = MPI_Allreduce(MPI_IN_PLACE, staging.raw_data(), count, type,
                               MPI_SUM, comm);
  if (rc != MPI_SUCCESS) return Failed(collective, name, rc);
  if (in_place || (collective == Collective::kReduce && rank_ != root))
    return Status::Ok();
  StageOut(groups, staging, alias);
  return Status::Ok();
}

Status MpiCommunicator::Failed(Collective collective, std::string_view name,
                               int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(code, text, &length);
  Status s = Aborted(
      std::string(CollectiveName(collective)) + " '" + std::string(name) +
      "' (collective #" + std::to_string(seq_) + ") across nodes (" +
      rank_names_[rank_] + ", rank " + std::to_string(rank_) + " of " +
      std::to_string(size_) +
      ") through MPI: " + std::string(text, static_cast<size_t>(length)));
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) broken_ = s;
  stopped_.store(true, std::memory_order_release);
  return s;
}

Status MpiCommunicator::AllReduce(std::string_view name, TensorGroups groups) {
  return Run(Collective::kAllReduce, name, groups, 0);
}

Status MpiCommunicator::Reduce(std::string_view name, TensorGroups groups,
                               int root) {
  return Run(Collective::kReduce, name, groups, root);
}

Status MpiCommunicator::Broadcast(std::string_view name, TensorGroups groups,
                                  int root) {
  return Run(Collective::kBroadcast, name, groups, root);
}

Status MpiCommunicator::AllGather(std::string_view name,
                                  const PlaceTensors& inputs,
                                  const PlaceTensors& outputs) {
  return Unimplemented(
      "all_gather '" + std::string(name) +
      "' across nodes: not supported (dense gradients are all-reduced)");
}

}  // namespace parex
