// OpenMPI's side of bench/cluster_allreduce_bench.cc: MPI_Allreduce of fp32,
// in place, per size from argv[1] to argv[2] bytes (x4 steps), argv[3]
// rounds of a warm-up and then timed batches between two barriers; rank 0
// prints "bytes mpi seconds_per_op" (the median over rounds). Started by the
// benchmark through mpirun.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/allreduce_timing.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 4) {
    std::fprintf(stderr,
                 "usage: mpi_allreduce_peer MIN_BYTES MAX_BYTES ROUNDS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long long min_bytes = std::atoll(argv[1]);
  const long long max_bytes = std::atoll(argv[2]);
  const int rounds = std::atoi(argv[3]);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (long long bytes = min_bytes; bytes > 0 && bytes <= max_bytes;
       bytes *= 4) {
    const int count = static_cast<int>(bytes / 4);
    std::vector<float> buffer(count);
    for (int i = 0; i < count; ++i) buffer[i] = 1.0f / (1 + i % 7);
    const int ops = parex::bench::OpsPerBatch(bytes);
    std::vector<double> seconds;
    for (int round = -1; round < rounds; ++round) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < ops; ++i) {
        MPI_Allreduce(MPI_IN_PLACE, buffer.data(), count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      }
      const double t = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (round >= 0) seconds.push_back(t / ops);
    }
    if (rank == 0) {
      std::printf("%lld mpi %.9g\n", bytes, parex::bench::Median(seconds));
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
