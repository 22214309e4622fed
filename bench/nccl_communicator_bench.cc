// Issue 29: the all-reduce of one place per GPU through parex's NCCL
// communicator (actors/comm/nccl_communicator.h: the fork and join events
// between the GPUs' communication streams, one NCCL group per call), fp32
// sum, in place, timed as bench/nccl_allreduce_peer times raw NCCL, whose
// lines it prints in the same form so that scripts/device_check sets them
// side by side:
//
//   build/bench/nccl_communicator_bench [--min-bytes B] [--max-bytes B]
//                                        [--iters N]
//
//   nccl_communicator ranks 2
//   bytes 1048576 time_us 20.1 algbw_GBps 52.17 busbw_GBps 52.17
//
// busbw = algbw x 2(n-1)/n (nccl-tests' convention). Exits 1 with fewer
// than two visible GPUs (NCCL refuses two ranks on one).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "actors/comm/nccl_communicator.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/device_context.h"
#include "kernels/kernel_registry.h"

namespace parex {
namespace {

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "nccl_communicator_bench: %s: %s\n", what,
                 s.ToString().c_str());
    std::exit(1);
  }
}

int Main(int argc, char** argv) {
  int64_t min_bytes = int64_t{1} << 20, max_bytes = int64_t{256} << 20;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--min-bytes") {
      min_bytes = value;
    } else if (flag == "--max-bytes") {
      max_bytes = value;
    } else if (flag == "--iters") {
      iters = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "nccl_communicator_bench: unknown flag %s\n",
                   flag.c_str());
      return 2;
    }
  }
  if (min_bytes < 4 || max_bytes < min_bytes || iters < 1) {
    std::fprintf(stderr, "nccl_communicator_bench: bad arguments\n");
    return 2;
  }
  const int n = CudaDeviceCount();
  if (n < 2) {
    std::fprintf(stderr,
                 "nccl_communicator_bench: %d CUDA devices visible; NCCL "
                 "needs a GPU per rank\n",
                 n);
    return 1;
  }
  RegisterCudaKernels(&KernelRegistry::Global());
  std::vector<Place> places;
  std::vector<std::unique_ptr<DeviceContext>> contexts;
  std::vector<DeviceContext*> streams;
  for (int d = 0; d < n; ++d) {
    places.push_back(Place::CUDA(d));
    auto c = CreateDeviceContext(places.back());
    Check(c.status(), "device context");
    contexts.push_back(std::move(c).value());
    streams.push_back(contexts.back().get());
  }
  auto comm = NcclCommunicator::Create(places, streams);
  Check(comm.status(), "communicator");
  std::printf("nccl_communicator ranks %d\n", n);
  auto drain = [&] {
    for (DeviceContext* s : streams) Check(s->Synchronize(), "synchronize");
  };
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const int64_t count = bytes / 4;
    std::vector<std::unique_ptr<Tensor>> owned;
    PlaceTensors tensors;
    for (const Place& p : places) {
      owned.push_back(std::make_unique<Tensor>(DType::kFP32, Dims{count}, p));
      tensors.push_back(owned.back().get());
    }
    for (int i = 0; i < 2; ++i)
      Check((*comm)->AllReduce("bench", tensors), "warm-up");
    drain();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      Check((*comm)->AllReduce("bench", tensors), "all-reduce");
    }
    drain();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        iters;
    const double algbw = static_cast<double>(count * 4) / seconds;
    std::printf("bytes %lld time_us %.1f algbw_GBps %.2f busbw_GBps %.2f\n",
                static_cast<long long>(count * 4), seconds * 1e6, algbw / 1e9,
                algbw * 2.0 * (n - 1) / n / 1e9);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace parex

int main(int argc, char** argv) { return parex::Main(argc, argv); }
