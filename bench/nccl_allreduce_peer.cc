// Issue 29: raw NCCL all-reduce across this process's GPUs, the peer of the
// collective actor's NCCL communicator. One rank per visible GPU
// (ncclCommInitAll), every rank's call inside one ncclGroupStart/End, fp32
// sum, out of place. Bandwidths as nccl-tests defines them: algbw = bytes /
// time, busbw = algbw * 2(n-1)/n. Needs two or more GPUs (NCCL refuses two
// ranks on one GPU). Run by scripts/device_check, or by hand:
//
//   build/bench/nccl_allreduce_peer [--min-bytes B] [--max-bytes B]
//                                   [--iters N] [--warmup N]
//
// prints one line per size, doubling from --min-bytes (1 MiB):
//   bytes 1048576 time_us 25.1 algbw_GBps 41.8 busbw_GBps 41.8
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

#define PEER_CUDA(expr)                                            \
  do {                                                             \
    cudaError_t e_ = (expr);                                       \
    if (e_ != cudaSuccess) {                                       \
      std::fprintf(stderr, "nccl_allreduce_peer: %s: %s\n", #expr, \
                   cudaGetErrorString(e_));                        \
      std::exit(1);                                                \
    }                                                              \
  } while (0)

#define PEER_NCCL(expr)                                            \
  do {                                                             \
    ncclResult_t r_ = (expr);                                      \
    if (r_ != ncclSuccess) {                                       \
      std::fprintf(stderr, "nccl_allreduce_peer: %s: %s\n", #expr, \
                   ncclGetErrorString(r_));                        \
      std::exit(1);                                                \
    }                                                              \
  } while (0)

struct Options {
  size_t min_bytes = size_t{1} << 20;
  size_t max_bytes = size_t{256} << 20;
  int iters = 20;
  int warmup = 5;
};

bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--min-bytes") && has_value) {
      o->min_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--max-bytes") && has_value) {
      o->max_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--iters") && has_value) {
      o->iters = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--warmup") && has_value) {
      o->warmup = std::atoi(argv[++i]);
    } else {
      return false;
    }
  }
  return o->min_bytes >= 4 && o->max_bytes >= o->min_bytes && o->iters >= 1 &&
         o->warmup >= 0;
}

// One rank per GPU: its communicator, stream and buffers of max_bytes.
struct Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
};

// `times` all-reduces of `count` floats on every rank, each round one
// group call; returns once every stream has finished them.
void AllReduce(std::vector<Rank>& ranks, size_t count, int times) {
  for (int t = 0; t < times; ++t) {
    PEER_NCCL(ncclGroupStart());
    for (Rank& r : ranks) {
      PEER_NCCL(ncclAllReduce(r.send, r.recv, count, ncclFloat, ncclSum, r.comm,
                              r.stream));
    }
    PEER_NCCL(ncclGroupEnd());
  }
  for (size_t d = 0; d < ranks.size(); ++d) {
    PEER_CUDA(cudaSetDevice(static_cast<int>(d)));
    PEER_CUDA(cudaStreamSynchronize(ranks[d].stream));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseOptions(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: nccl_allreduce_peer [--min-bytes B] [--max-bytes B] "
                 "[--iters N >= 1] [--warmup N >= 0]\n");
    return 2;
  }
  int n = 0;
  PEER_CUDA(cudaGetDeviceCount(&n));
  if (n < 2) {
    std::fprintf(stderr,
                 "nccl_allreduce_peer: %d GPU(s) visible; an all-reduce "
                 "across GPUs needs 2 or more (NCCL refuses two ranks on one "
                 "GPU)\n",
                 n);
    return 1;
  }
  int version = 0;
  PEER_NCCL(ncclGetVersion(&version));
  std::printf("nccl %d ranks %d\n", version, n);
  std::vector<Rank> ranks(n);
  std::vector<ncclComm_t> comms(n);
  PEER_NCCL(ncclCommInitAll(comms.data(), n, nullptr));
  for (int d = 0; d < n; ++d) {
    Rank& r = ranks[d];
    r.comm = comms[d];
    PEER_CUDA(cudaSetDevice(d));
    PEER_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    PEER_CUDA(cudaMalloc(&r.send, o.max_bytes));
    PEER_CUDA(cudaMalloc(&r.recv, o.max_bytes));
    PEER_CUDA(cudaMemset(r.send, 0, o.max_bytes));
  }
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float);
    AllReduce(ranks, count, o.warmup);
    const auto start = std::chrono::steady_clock::now();
    AllReduce(ranks, count, o.iters);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        o.iters;
    const double algbw = static_cast<double>(count * sizeof(float)) / seconds;
    const double busbw = algbw * 2.0 * (n - 1) / n;
    std::printf("bytes %zu time_us %.1f algbw_GBps %.2f busbw_GBps %.2f\n",
                count * sizeof(float), seconds * 1e6, algbw / 1e9, busbw / 1e9);
    std::fflush(stdout);
  }
  for (int d = 0; d < n; ++d) {
    PEER_CUDA(cudaSetDevice(d));
    PEER_CUDA(cudaFree(ranks[d].send));
    PEER_CUDA(cudaFree(ranks[d].recv));
    PEER_CUDA(cudaStreamDestroy(ranks[d].stream));
    PEER_NCCL(ncclCommDestroy(ranks[d].comm));
  }
  return 0;
}
