#include "actors/comm/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "actors/comm/collective_checks.h"
#include "actors/comm/device_communicators.h"

namespace parex {
namespace {

std::string NcclMessage(ncclResult_t r) {
  std::string s = ncclGetErrorString(r);
  if (r == ncclSystemError || r == ncclRemoteError || r == ncclInternalError) {
    const char* last = ncclGetLastError(nullptr);
    if (last != nullptr && *last != '\0') s += ": " + std::string(last);
  }
  return s;
}

Status NcclStatus(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess || r == ncclInProgress) return Status::Ok();
  return Internal(what + ": NCCL: " + NcclMessage(r));
}

StatusOr<ncclDataType_t> NcclType(DType dtype, bool copy_only) {
  switch (dtype) {
    case DType::kFP32:
      return ncclFloat32;
    case DType::kFP64:
      return ncclFloat64;
    case DType::kFP16:
      return ncclFloat16;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kInt8:
      return ncclInt8;
    case DType::kUInt8:
      return ncclUint8;
    default:
      break;
  }
  // A copy moves bytes whatever they mean.
  if (copy_only && SizeOf(dtype) > 0) return ncclUint8;
  return InvalidArgument(std::string("NCCL cannot sum ") + DTypeName(dtype));
}

std::string PlaceList(const std::vector<Place>& places) {
  std::string s;
  for (const Place& p : places) s += (s.empty() ? "" : ", ") + p.ToString();
  return s;
}

}  // namespace

struct NcclCommunicator::Comms {
  std::vector<ncclComm_t> comms;
  bool aborted = false;
};

NcclCommunicator::NcclCommunicator(std::vector<Place> places,
                                   std::vector<DeviceContext*> streams)
    : places_(std::move(places)),
      streams_(std::move(streams)),
      comms_(std::make_unique<Comms>()) {}

StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    std::vector<Place> places, std::vector<DeviceContext*> streams) {
  const std::string where = "NCCL communicator of " + PlaceList(places);
  if (places.empty() || streams.size() != places.size()) {
    return InvalidArgument(where + ": " + std::to_string(streams.size()) +
                           " streams for " + std::to_string(places.size()) +
                           " places");
  }
  std::vector<int> devices;
  for (size_t i = 0; i < places.size(); ++i) {
    if (!places[i].is_cuda() || streams[i] == nullptr ||
        streams[i]->place() != places[i] ||
        streams[i]->native_stream() == nullptr) {
      return InvalidArgument(where + ": place " + places[i].ToString() +
                             " needs a CUDA stream of its own");
    }
    for (int d : devices) {
      if (d == places[i].id) {
        return InvalidArgument(where + ": two places on GPU " +
                               std::to_string(d) +
                               " (NCCL takes one rank per GPU; places sharing "
                               "a GPU reduce in-device)");
      }
    }
    devices.push_back(places[i].id);
  }
  auto c = std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(std::move(places), std::move(streams)));
  c->comms_->comms.assign(devices.size(), nullptr);
  PAREX_RETURN_IF_ERROR(NcclStatus(
      ncclCommInitAll(c->comms_->comms.data(), static_cast<int>(devices.size()),
                      devices.data()),
      where + ": ncclCommInitAll"));
  c->fork_ = c->streams_[0]->CreateEvent();
  for (DeviceContext* s : c->streams_) c->join_.push_back(s->CreateEvent());
  return c;
}

NcclCommunicator::~NcclCommunicator() {
  for (ncclComm_t comm : comms_->comms) {
    if (comm == nullptr) continue;
    if (comms_->aborted) continue;  // ncclCommAbort freed it
    (void)ncclCommDestroy(comm);
  }
}

Status NcclCommunicator::Usable() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

Status NcclCommunicator::Break(const Status& error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_.ok()) return broken_;
  broken_ = Status(error.code(),
                   error.message() +
                       " (the NCCL communicators were aborted; make the "
                       "executor again to go on)");
  if (!comms_->aborted) {
    comms_->aborted = true;
    for (ncclComm_t comm : comms_->comms) (void)ncclCommAbort(comm);
  }
  return broken_;
}

Status NcclCommunicator::Health() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return broken_;
  }
  for (size_t i = 0; i < comms_->comms.size(); ++i) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comms_->comms[i], &async);
    if (r == ncclSuccess) r = async;
    if (r != ncclSuccess && r != ncclInProgress) {
      return Break(NcclStatus(r, "NCCL on " + places_[i].ToString()));
    }
  }
  return Status::Ok();
}

void NcclCommunicator::Interrupt(const Status& reason) {
  // Work already queued may wait for a peer that will never come: only an
  // abort frees it.
  (void)Break(reason.ok() ? Aborted("interrupted") : reason);
}

template <typename Issue>
Status NcclCommunicator::Run(Collective collective, std::string_view name,
                             TensorGroups groups, int root, Issue issue) {
  const std::string label = CollectiveLabel(collective, name, 1, 0);
  PAREX_RETURN_IF_ERROR(Usable().WithContext(label));
  PAREX_RETURN_IF_ERROR(CheckPlaceTensors(collective, name, groups, places_));
  const int n = world_size();
  if (root < 0 || root >= n) {
    return InvalidArgument(label + ": root " + std::to_string(root) +
                           " is not a rank of " + std::to_string(n));
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    PAREX_RETURN_IF_ERROR(
        NcclType(groups[g][0]->dtype(), collective == Collective::kBroadcast)
            .status()
            .WithContext(CollectiveLabel(collective, name, groups.size(), g)));
  }
  PAREX_RETURN_IF_ERROR(Health().WithContext(label));
  // Fork: every rank's stream waits for what streams_[0] holds.
  if (n > 1) {
    PAREX_RETURN_IF_ERROR(streams_[0]->RecordEvent(fork_.get()));
    for (int i = 1; i < n; ++i) {
      PAREX_RETURN_IF_ERROR(streams_[i]->WaitEvent(fork_.get()));
    }
  }
  ncclResult_t r = ncclGroupStart();
  for (size_t g = 0; g < groups.size() && r == ncclSuccess; ++g) {
    const PlaceTensors& tensors = groups[g];
    const bool copy = collective == Collective::kBroadcast;
    ncclDataType_t type = NcclType(tensors[0]->dtype(), copy).value();
    // A copy of a type NCCL cannot add moves its bytes.
    const size_t count = type == ncclUint8
                             ? tensors[0]->bytes()
                             : static_cast<size_t>(tensors[0]->numel());
    for (int i = 0; i < n && r == ncclSuccess; ++i) {
      r = issue(tensors, i, count, type, comms_->comms[i],
                static_cast<cudaStream_t>(streams_[i]->native_stream()));
    }
  }
  const ncclResult_t ended = ncclGroupEnd();
  if (r == ncclSuccess) r = ended;
  if (r != ncclSuccess && r != ncclInProgress) {
    return Break(NcclStatus(r, label + " on " + PlaceList(places_)));
  }
  // Join: streams_[0] waits for every rank's collective.
  for (int i = 1; i < n; ++i) {
    PAREX_RETURN_IF_ERROR(streams_[i]->RecordEvent(join_[i].get()));
    PAREX_RETURN_IF_ERROR(streams_[0]->WaitEvent(join_[i].get()));
  }
  return Status::Ok();
}

Status NcclCommunicator::AllReduce(std::string_view name, TensorGroups groups) {
  return Run(Collective::kAllReduce, name, groups, 0,
             [](const PlaceTensors& t, int i, size_t count, ncclDataType_t type,
                ncclComm_t comm, cudaStream_t stream) {
               void* data = t[i]->raw_data();
               return ncclAllReduce(data, data, count, type, ncclSum, comm,
                                    stream);
             });
}

Status NcclCommunicator::Reduce(std::string_view name, TensorGroups groups,
                                int root) {
  // ncclReduce writes only the root's buffer: the others keep their values
  // (communicator.h).
  return Run(Collective::kReduce, name, groups, root,
             [root](const PlaceTensors& t, int i, size_t count,
                    ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
               void* data = t[i]->raw_data();
               return ncclReduce(data, data, count, type, ncclSum, root, comm,
                                 stream);
             });
}

Status NcclCommunicator::Broadcast(std::string_view name, TensorGroups groups,
                                   int root) {
  return Run(Collective::kBroadcast, name, groups, root,
             [root](const PlaceTensors& t, int i, size_t count,
                    ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
               void* data = t[i]->raw_data();
               return ncclBroadcast(data, data, count, type, root, comm,
                                    stream);
             });
}

Status NcclCommunicator::AllGather(std::string_view name,
                                   const PlaceTensors& inputs,
                                   const PlaceTensors& outputs) {
  (void)inputs;
  (void)outputs;
  return Unimplemented(
      "all_gather '" + std::string(name) + "' on GPUs " + PlaceList(places_) +
      ": sparse gradients across GPUs are not implemented (use dense "
      "gradients, is_sparse=False)");
}

void RegisterNcclCommunicator() {
  RegisterDeviceCommunicator(
      Place::Kind::kCUDA,
      [](const std::vector<Place>& places,
         const std::vector<DeviceContext*>& streams)
          -> StatusOr<std::shared_ptr<Communicator>> {
        PAREX_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> c,
                               NcclCommunicator::Create(places, streams));
        return std::shared_ptr<Communicator>(std::move(c));
      });
}

}  // namespace parex
