#include "kernels/cuda/cuda_device_context.h"

#include <atomic>
#include <mutex>
#include <string>

#include "base/config.h"
#include "base/logging.h"
#include "kernels/allocator.h"
#include "kernels/cuda/cuda_allocator.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"

namespace parex {

// ---- CudaEvent ----

CudaEvent::~CudaEvent() {
  if (event_ == nullptr) return;
  CudaDeviceGuard guard(device_);
  (void)cudaEventDestroy(event_);
}

Status CudaEvent::EnsureCreated(int device) {
  if (event_ != nullptr) return Status::Ok();
  PAREX_CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  device_ = device;
  return Status::Ok();
}

bool CudaEvent::Query() {
  if (event_ == nullptr) return true;
  cudaError_t error = cudaEventQuery(event_);
  if (error == cudaSuccess) return true;
  // cudaErrorNotReady is the normal "still running"; any other error is
  // reported by Synchronize, which callers reach when Query stays false.
  if (error != cudaErrorNotReady) (void)cudaGetLastError();
  return false;
}

Status CudaEvent::Synchronize() {
  if (event_ == nullptr) return Status::Ok();
  PAREX_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
  return Status::Ok();
}

// ---- CudaDeviceContext ----

namespace {

// Gives a new handle a workspace of its own (PAREX_CUBLAS_WORKSPACE_MB).
// Without one, cuBLAS takes workspace from its default pool, and a GEMM
// that finds the pool busy (another stream's GEMM, or a capture holding
// it) runs an algorithm without workspace: other bits than the same GEMM
// in the run before. With one per handle, and each handle on one stream,
// a GEMM's algorithm depends on its shape only, eager or captured.
Status SetCublasWorkspace(int device, cublasHandle_t cublas, void** workspace) {
  long mb = GetConfigInt("PAREX_CUBLAS_WORKSPACE_MB");
  if (mb < 0) {
    int major = 0;
    PAREX_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(
        &major, cudaDevAttrComputeCapabilityMajor, device));
    mb = major >= 9 ? 32 : 4;  // cuBLAS's recommendation per architecture
  }
  if (mb == 0) return Status::Ok();
  const size_t bytes = static_cast<size_t>(mb) << 20;
  PAREX_CUDA_RETURN_IF_ERROR(cudaMalloc(workspace, bytes));
  PAREX_CUBLAS_RETURN_IF_ERROR(cublasSetWorkspace(cublas, *workspace, bytes));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<CudaDeviceContext>> CudaDeviceContext::Create(
    Place place) {
  PAREX_RETURN_IF_ERROR(CheckCudaPlace(place));
  RegisterCudaAllocator();
  CudaDeviceGuard guard(place.id);
  PAREX_RETURN_IF_ERROR(guard.status().WithContext(place.ToString()));
  cudaStream_t stream = nullptr;
  Status status = [&]() -> Status {
    PAREX_CUDA_RETURN_IF_ERROR(
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return Status::Ok();
  }();
  if (!status.ok()) return status.WithContext(place.ToString());
  cublasHandle_t cublas = nullptr;
  status = [&]() -> Status {
    PAREX_CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas));
    PAREX_CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas, stream));
    PAREX_CUBLAS_RETURN_IF_ERROR(
        cublasSetPointerMode(cublas, CUBLAS_POINTER_MODE_HOST));
    return Status::Ok();
  }();
  void* workspace = nullptr;
  if (status.ok()) status = SetCublasWorkspace(place.id, cublas, &workspace);
  if (!status.ok()) {
    if (cublas != nullptr) (void)cublasDestroy(cublas);
    if (workspace != nullptr) (void)cudaFree(workspace);
    (void)cudaStreamDestroy(stream);
    return status.WithContext(place.ToString());
  }
  auto cudnn = std::make_shared<CudnnSlot>();
  cudnn->device = place.id;
  auto context = std::unique_ptr<CudaDeviceContext>(new CudaDeviceContext(
      place, stream, cublas, std::move(cudnn), /*owns=*/true));
  context->cublas_workspace_ = workspace;
  return context;
}

CudaDeviceContext::CudaDeviceContext(Place place, cudaStream_t stream,
                                     cublasHandle_t cublas,
                                     std::shared_ptr<CudnnSlot> cudnn,
                                     bool owns)
    : DeviceContext(place),
      stream_(stream),
      cublas_(cublas),
      cudnn_(std::move(cudnn)),
      owns_(owns) {}

std::unique_ptr<DeviceContext> CudaDeviceContext::NewOnSameStream() const {
  return std::unique_ptr<DeviceContext>(
      new CudaDeviceContext(place(), stream_, cublas_, cudnn_, /*owns=*/false));
}

CudaDeviceContext::CudnnSlot::~CudnnSlot() {
  if (handle == nullptr) return;
  CudaDeviceGuard guard(device);
  (void)cudnnDestroy(handle);
}

StatusOr<cudnnHandle_t> CudaDeviceContext::cudnn() const {
  std::lock_guard<std::mutex> lock(cudnn_->mu);
  if (cudnn_->handle != nullptr) return cudnn_->handle;
  PAREX_RETURN_IF_ERROR(Activate());
  cudnnHandle_t handle = nullptr;
  Status status = [&]() -> Status {
    PAREX_CUDNN_RETURN_IF_ERROR(cudnnCreate(&handle));
    PAREX_CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle, stream_));
    return Status::Ok();
  }();
  if (!status.ok()) {
    if (handle != nullptr) (void)cudnnDestroy(handle);
    return status.WithContext(place().ToString());
  }
  cudnn_->handle = handle;
  return handle;
}

void RegisterCudaDeviceContextFactory() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterDeviceContextFactory(
        Place::Kind::kCUDA,
        [](Place place) -> StatusOr<std::unique_ptr<DeviceContext>> {
          PAREX_ASSIGN_OR_RETURN(std::unique_ptr<CudaDeviceContext> context,
                                 CudaDeviceContext::Create(place));
          return std::unique_ptr<DeviceContext>(std::move(context));
        });
  });
}

CudaDeviceContext::~CudaDeviceContext() {
  if (!owns_) return;
  CudaDeviceGuard guard(device());
  (void)cublasDestroy(cublas_);
  if (cublas_workspace_ != nullptr) (void)cudaFree(cublas_workspace_);
  (void)cudaStreamDestroy(stream_);
}

Status CudaDeviceContext::Activate() const {
  PAREX_CUDA_RETURN_IF_ERROR(cudaSetDevice(device()));
  return Status::Ok();
}

Status CudaDeviceContext::Synchronize() {
  PAREX_RETURN_IF_ERROR(Activate());
  PAREX_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

std::unique_ptr<Event> CudaDeviceContext::CreateEvent() {
  return std::make_unique<CudaEvent>();
}

Status CudaDeviceContext::RecordEvent(Event* event) {
  auto* cuda_event = dynamic_cast<CudaEvent*>(event);
  if (cuda_event == nullptr) {
    return InvalidArgument(place().ToString() +
                           ": RecordEvent needs an event of a CUDA context");
  }
  PAREX_RETURN_IF_ERROR(Activate());
  PAREX_RETURN_IF_ERROR(cuda_event->EnsureCreated(device()));
  PAREX_CUDA_RETURN_IF_ERROR(cudaEventRecord(cuda_event->get(), stream_));
  return Status::Ok();
}

Status CudaDeviceContext::WaitEvent(Event* event) {
  auto* cuda_event = dynamic_cast<CudaEvent*>(event);
  if (cuda_event == nullptr) return event->Synchronize();
  if (cuda_event->get() == nullptr) return Status::Ok();  // never recorded
  PAREX_RETURN_IF_ERROR(Activate());
  PAREX_CUDA_RETURN_IF_ERROR(
      cudaStreamWaitEvent(stream_, cuda_event->get(), 0));
  return Status::Ok();
}

Status CudaDeviceContext::Copy(void* dst, const void* src, size_t bytes,
                               cudaMemcpyKind kind) {
  if (bytes == 0) return Status::Ok();
  PAREX_RETURN_IF_ERROR(Activate());
  PAREX_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, kind, stream_));
  return Status::Ok();
}

Status CudaDeviceContext::CopyToHost(void* dst, const void* src, size_t bytes) {
  return Copy(dst, src, bytes, cudaMemcpyDeviceToHost);
}

Status CudaDeviceContext::CopyFromHost(void* dst, const void* src,
                                       size_t bytes) {
  return Copy(dst, src, bytes, cudaMemcpyHostToDevice);
}

namespace {

class CudaGraph : public DeviceGraph {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream, int device)
      : exec_(exec), stream_(stream), device_(device) {}
  ~CudaGraph() override {
    CudaDeviceGuard guard(device_);
    (void)cudaGraphExecDestroy(exec_);
  }
  Status Launch() override {
    CudaDeviceGuard guard(device_);
    PAREX_RETURN_IF_ERROR(guard.status());
    PAREX_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, stream_));
    return Status::Ok();
  }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
  int device_;
};

// PAREX_CUDA_GRAPH_DOT=<prefix>: the graph as <prefix>.<n>.dot, n counting
// the process's captures (a debugging aid; a failed write is logged).
void WriteGraphDot(cudaGraph_t graph) {
  const std::string prefix = GetConfig("PAREX_CUDA_GRAPH_DOT");
  if (prefix.empty()) return;
  static std::atomic<int> captures{0};
  const std::string path =
      prefix + "." + std::to_string(captures.fetch_add(1)) + ".dot";
  const cudaError_t e = cudaGraphDebugDotPrint(graph, path.c_str(),
                                               cudaGraphDebugDotFlagsVerbose);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    LogWarn(Subsystem::kKernel, "writing the captured graph to " + path + ": " +
                                    cudaGetErrorString(e));
  }
}

}  // namespace

Status CudaDeviceContext::BeginCapture(
    const std::vector<DeviceContext*>& joined) {
  PAREX_RETURN_IF_ERROR(Activate());
  PAREX_CUDA_RETURN_IF_ERROR(
      cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  // Every joined stream waits for this one: its work joins the capture.
  Status s = RecordEvent(&capture_fork_);
  for (DeviceContext* other : joined) {
    if (s.ok()) s = other->WaitEvent(&capture_fork_);
  }
  if (!s.ok()) {
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(stream_, &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return s.WithContext(place().ToString() + ": beginning a capture");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<DeviceGraph>> CudaDeviceContext::EndCapture(
    const std::vector<DeviceContext*>& joined) {
  PAREX_RETURN_IF_ERROR(Activate());
  // This stream waits for every joined one: their work ends in the graph.
  Status s;
  while (capture_joins_.size() < joined.size()) {
    capture_joins_.push_back(std::make_unique<CudaEvent>());
  }
  for (size_t k = 0; k < joined.size() && s.ok(); ++k) {
    s = joined[k]->RecordEvent(capture_joins_[k].get());
    if (s.ok()) s = WaitEvent(capture_joins_[k].get());
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  if (s.ok() && ended != cudaSuccess) {
    s = CudaErrorStatus(ended, "cudaStreamEndCapture", __FILE__, __LINE__);
  }
  if (!s.ok()) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return s.WithContext(place().ToString() + ": ending a capture");
  }
  WriteGraphDot(graph);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    (void)cudaGetLastError();
    return CudaErrorStatus(made, "cudaGraphInstantiate", __FILE__, __LINE__)
        .WithContext(place().ToString());
  }
  return std::unique_ptr<DeviceGraph>(
      std::make_unique<CudaGraph>(exec, stream_, device()));
}

void* CudaDeviceContext::AllocateHostStaging(size_t bytes) {
  if (!Activate().ok()) return nullptr;
  void* ptr = nullptr;
  if (cudaMallocHost(&ptr, bytes == 0 ? 1 : bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return ptr;
}

void CudaDeviceContext::FreeHostStaging(void* ptr) {
  if (ptr != nullptr) (void)cudaFreeHost(ptr);
}

Allocator* CudaDeviceContext::host_allocator() const {
  static Allocator* const pinned =
      MakeCachingAllocator(
          Place::CPU(),
          [](size_t size) -> void* {
            void* ptr = nullptr;
            if (cudaHostAlloc(&ptr, size, cudaHostAllocPortable) !=
                cudaSuccess) {
              (void)cudaGetLastError();
              return nullptr;
            }
            return ptr;
          },
          [](void* ptr) { (void)cudaFreeHost(ptr); })
          .release();
  return pinned;
}

Status CudaDeviceContext::CopyOnDevice(void* dst, const void* src,
                                       size_t bytes) {
  return Copy(dst, src, bytes, cudaMemcpyDeviceToDevice);
}

Status CudaDeviceContext::SumToAll(const std::vector<const void*>& inputs,
                                   const std::vector<void*>& outputs,
                                   DType dtype, int64_t n) {
  if (inputs.size() > static_cast<size_t>(kMaxSumInputs) ||
      outputs.size() > static_cast<size_t>(kMaxSumInputs)) {
    return Unimplemented("SumToAll of more than " +
                         std::to_string(kMaxSumInputs) + " buffers");
  }
  PAREX_RETURN_IF_ERROR(Activate());
  const int in = static_cast<int>(inputs.size());
  const int out = static_cast<int>(outputs.size());
  if (dtype == DType::kFP32) {
    PAREX_CUDA_RETURN_IF_ERROR(LaunchSumToAll<float>(
        reinterpret_cast<const float* const*>(inputs.data()), in,
        reinterpret_cast<float* const*>(outputs.data()), out, n, stream()));
    return Status::Ok();
  }
  if (dtype == DType::kFP64) {
    PAREX_CUDA_RETURN_IF_ERROR(LaunchSumToAll<double>(
        reinterpret_cast<const double* const*>(inputs.data()), in,
        reinterpret_cast<double* const*>(outputs.data()), out, n, stream()));
    return Status::Ok();
  }
  return Unimplemented(std::string("SumToAll of ") + DTypeName(dtype));
}

}  // namespace parex
