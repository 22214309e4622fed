// Issue 29: the all-reduce of places sharing one GPU (`cuda:0x2`, the
// in-device communicator: one pass of the device's SumToAll, every slot's
// buffer read once and written once) against its peer, a device-to-device
// copy of the same bytes on the same stream, in one run. Run by
// scripts/device_check on a GPU machine, or by hand:
//
//   build/bench/in_device_allreduce_bench [--min-bytes B] [--max-bytes B]
//                                          [--iters N] [--places K]
//
// prints one line per size, doubling from --min-bytes (1 MiB):
//   bytes 1048576 allreduce_us 30.1 copy_us 12.0 algbw_GBps 34.8
//   copy_GBps 87.4 ratio 0.40 mem_GBps 139.4 mem_ratio 0.80
// algbw = bytes / all-reduce time (the bytes each place holds); copy_GBps =
// bytes / copy time; ratio = copy time / all-reduce time. An all-reduce of K
// places must read and write K buffers, a copy reads and writes one, so the
// memory bandwidths are mem_GBps = 2 K bytes / all-reduce time against the
// copy's 2 bytes / copy time, and mem_ratio = their quotient (issue 29's
// target, 0.8 of the copy's bandwidth). Exits 1 without a CUDA device.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "actors/comm/in_device_communicator.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/device_context.h"
#include "kernels/kernel_registry.h"

namespace parex {
namespace {

using Clock = std::chrono::steady_clock;

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "in_device_allreduce_bench: %s: %s\n", what,
                 s.ToString().c_str());
    std::exit(1);
  }
}

// Microseconds per call of `f`, `iters` calls after two warm-up calls, the
// stream drained before and after.
template <typename F>
double TimeUs(DeviceContext* context, int iters, F f) {
  for (int i = 0; i < 2; ++i) Check(f(), "warm-up");
  Check(context->Synchronize(), "synchronize");
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) Check(f(), "timed call");
  Check(context->Synchronize(), "synchronize");
  return std::chrono::duration<double, std::micro>(Clock::now() - start)
             .count() /
         iters;
}

int Main(int argc, char** argv) {
  int64_t min_bytes = int64_t{1} << 20, max_bytes = int64_t{256} << 20;
  int iters = 20, places = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--min-bytes")
      min_bytes = value;
    else if (flag == "--max-bytes")
      max_bytes = value;
    else if (flag == "--iters")
      iters = static_cast<int>(value);
    else if (flag == "--places")
      places = static_cast<int>(value);
    else {
      std::fprintf(stderr, "in_device_allreduce_bench: unknown flag %s\n",
                   flag.c_str());
      return 2;
    }
  }
  if (min_bytes < 4 || max_bytes < min_bytes || iters < 1 || places < 2 ||
      places > 8) {
    std::fprintf(stderr, "in_device_allreduce_bench: bad arguments\n");
    return 2;
  }
  if (CudaDeviceCount() == 0) {
    std::fprintf(stderr, "in_device_allreduce_bench: no CUDA device visible\n");
    return 1;
  }
  RegisterCudaKernels(&KernelRegistry::Global());
  std::vector<Place> list;
  for (int p = 0; p < places; ++p) list.push_back(Place::CUDA(0, p));
  auto context = CreateDeviceContext(list[0]);
  Check(context.status(), "device context");
  DeviceContext* ctx = context->get();
  InDeviceCommunicator comm(list, ctx);
  std::printf("in-device all-reduce over %d places of cuda:0, fp32 sum\n",
              places);
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const int64_t n = bytes / 4;
    std::vector<std::unique_ptr<Tensor>> owned;
    PlaceTensors tensors;
    for (const Place& p : list) {
      owned.push_back(std::make_unique<Tensor>(DType::kFP32, Dims{n}, p));
      tensors.push_back(owned.back().get());
    }
    Tensor copy_dst(DType::kFP32, Dims{n}, list[0]);
    const double reduce_us =
        TimeUs(ctx, iters, [&] { return comm.AllReduce("bench", tensors); });
    const double copy_us = TimeUs(ctx, iters, [&] {
      return ctx->CopyOnDevice(copy_dst.raw_data(), tensors[0]->raw_data(),
                               static_cast<size_t>(n) * 4);
    });
    const double gb = static_cast<double>(n) * 4 / 1e9;
    const double mem_gbps = 2.0 * places * gb / (reduce_us * 1e-6);
    std::printf(
        "bytes %lld allreduce_us %.1f copy_us %.1f algbw_GBps %.1f "
        "copy_GBps %.1f ratio %.2f mem_GBps %.1f mem_ratio %.2f\n",
        static_cast<long long>(n * 4), reduce_us, copy_us,
        gb / (reduce_us * 1e-6), gb / (copy_us * 1e-6), copy_us / reduce_us,
        mem_gbps, mem_gbps / (2.0 * gb / (copy_us * 1e-6)));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace parex

int main(int argc, char** argv) { return parex::Main(argc, argv); }
