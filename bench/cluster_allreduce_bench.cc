// Cross-process all-reduce (issue 14, benchmark 2; DESIGN.md §4, §6):
// parex's collective actor driving its Gloo communicator, against raw Gloo
// and OpenMPI in the same run, 2 and 3 processes on 127.0.0.1, fp32
// 4 KiB ... 64 MiB per rank. Printed, never asserted.
//
// The driver (no --worker) writes a topology of N nodes on free ports of
// 127.0.0.1 and a secret into a temporary folder and starts N workers (this
// program with --worker). Each worker joins the cluster the way `parex node`
// does (CAF handshake, Gloo rendezvous through rank 0's node actor), and
// separately connects a raw Gloo context through a FileStore in the same
// folder. Per size, in rounds whose order rotates, each measured by rank 0
// between two barriers of the raw context:
//   parex        an ActorRunner step of a TaskGraph of `ops` collectives of
//                a blocking communicator in a chain: the detached
//                collective actor issues them in order, each a call of
//                GlooCommunicator::AllReduce on the rank's tensor (what a
//                training step does with its gradient buckets);
//   parex-direct GlooCommunicator::AllReduce called from the main thread:
//                the communicator without the actors, to tell their cost;
//   gloo-ring    gloo::AllreduceRingChunked, the algorithm parex's Gloo
//                communicator runs, built over the buffer itself (no
//                copies) on a context of its own per size, as parex makes
//                one per collective (two such algorithms on one context of
//                this Gloo stall: actors/comm/gloo_communicator.h), called
//                from the main thread: raw Gloo;
//   gloo-unbound gloo::allreduce (ring over unbound buffers; what PyTorch's
//                ProcessGroupGloo calls) in place, on the main context.
// Then `mpirun -np N` runs mpi_allreduce_peer (MPI_Allreduce in place,
// OpenMPI's TCP transport over the loopback, as between machines) with the
// same sizes, rounds and batch lengths.
// A batch is about 32 MiB of calls, at most 200 (under mpirun: parex's,
// the communicator's and MPI's at most 2000; allreduce_timing.h).
// Each cell is the median over rounds of (batch time / ops in the batch);
// algbw = bytes / time, busbw = algbw * 2(N-1)/N (nccl-tests' convention).
#include <fcntl.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actors/cluster/cluster.h"
#include "actors/comm/gloo_communicator.h"
#include "actors/comm/mpi_communicator.h"
#include "actors/runtime/actor_runner.h"
#include "bench/allreduce_timing.h"
#include "proto/topology_io.h"
#include "tests/free_port.h"

extern char** environ;

namespace parex {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// "mpi": MPI_Allreduce in place, called directly by the workers of a
// topology of collective MPI (started by mpirun), where parex's path is its
// MpiCommunicator.
const char* const kMethods[] = {"parex", "gloo-ring", "gloo-unbound",
                                "parex-direct", "mpi"};
constexpr int kNumMethods = 5;

struct Options {
  std::vector<int> ranks = {2, 3};
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = 64 << 20;
  int rounds = 7;
  std::string mpirun = "mpirun";
  std::string mpi_peer;  // default: mpi_allreduce_peer beside this program
  bool no_mpi = false;
  bool no_gloo = false;          // --backend mpi: leave the raw Gloo rows out
  std::string backend = "gloo";  // the topology's collective: gloo or mpi
  std::string bind = "none";     // mpirun --bind-to (--backend mpi)
  // Worker mode.
  bool worker = false;
  std::string topology, node, store;
};

// parex: per size, a step graph of `ops` collectives in a chain, each
// all-reducing `group`: one step is one batch, as a training step issues
// its gradients' collectives one after another.
StatusOr<std::unique_ptr<ActorRunner>> ChainRunner(Communicator& comm,
                                                   const PlaceTensors& group,
                                                   int ops, int threads) {
  auto graph = std::make_shared<TaskGraph>();
  graph->communicators.push_back({comm.backend(), comm.blocking()});
  for (int i = 0; i < ops; ++i) {
    TaskNode node;
    node.label = "all_reduce bench #" + std::to_string(i);
    node.stream = TaskStream::kCommunication;
    node.communicator = 0;
    if (i + 1 < ops) node.successors = {i + 1};
    graph->nodes.push_back(node);
  }
  graph->task = [&comm, &group](int, int64_t) {
    return comm.AllReduce("bench", group);
  };
  PAREX_RETURN_IF_ERROR(graph->Finalize());
  ActorRunnerOptions runner_options;
  runner_options.num_threads = threads;
  return ActorRunner::Create(graph, runner_options);
}

// One worker: joins, measures, rank 0 prints "bytes method seconds_per_op".
// Joins the cluster as `parex node` does: under mpirun (collective MPI)
// as the node of the rank, else as --node. Sets `mpi` to the backend.
StatusOr<std::unique_ptr<Cluster>> JoinAsWorker(const Options& o, bool* mpi) {
  PAREX_ASSIGN_OR_RETURN(Topology topology, LoadTopology(o.topology));
  *mpi = topology.backend == "mpi";
  const std::optional<MpirunRank> started = StartedByMpirun();
  const std::string node =
      *mpi && started ? topology.nodes[started->rank].name : o.node;
  return Cluster::Join(topology, node,
                       {{"program", "cluster_allreduce_bench"}});
}

int Worker(const Options& o) {
  bool mpi = false;
  StatusOr<std::unique_ptr<Cluster>> joined = JoinAsWorker(o, &mpi);
  if (!joined.ok()) {
    std::fprintf(stderr, "%s\n", joined.status().ToString().c_str());
    return 1;
  }
  const std::optional<MpirunRank> started = StartedByMpirun();
  Cluster& cluster = **joined;
  const int rank = cluster.rank();
  const int size = cluster.size();
  Communicator& comm = cluster.cross();

  // The raw Gloo peer: its own context, as a Gloo user would connect it
  // (under mpirun, unless --no-gloo: its transport thread then shares the
  // rank's core with the other methods).
  const bool raw_gloo = !(mpi && o.no_gloo);
  gloo::rendezvous::FileStore file_store(o.store);
  gloo::rendezvous::PrefixStore store("raw", file_store);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(std::chrono::seconds(120));
  std::shared_ptr<gloo::transport::Device> device;
  if (raw_gloo) {
    device = gloo::transport::tcp::CreateDevice(attr);
    context->connectFullMesh(store, device);
  }
  // Under mpirun MPI's barrier (microseconds, so the ranks start each
  // batch together), else Gloo's.
  auto barrier = [&] {
    if (mpi) {
      MPI_Barrier(MPI_COMM_WORLD);
      return;
    }
    gloo::BarrierOptions b(context);
    gloo::barrier(b);
  };

  // The groups are made once, as the executor binds its op handles' groups.
  Tensor parex_buffer, direct_buffer;
  const PlaceTensors parex_group = {&parex_buffer};
  const PlaceTensors direct_group = {&direct_buffer};
  std::vector<float> mpi_buffer;
  const int num_methods = mpi ? kNumMethods : kNumMethods - 1;
  int64_t step = 0;
  // Under mpirun (collective MPI, whose calls run on the workers), each
  // process's share of the cores, as parex node takes by default.
  const int threads =
      mpi && started
          ? std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                            started->local_size)
          : 2;

  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
    const int64_t count = bytes / 4;
    // Under mpirun, parex's path, the communicator and MPI are microsecond
    // calls: longer batches (allreduce_timing.h).
    const int ops = bench::OpsPerBatch(bytes);
    const int fast_ops = bench::OpsPerBatch(bytes, mpi ? 2000 : 200);
    auto ops_of = [&](int method) {
      return method == 0 || method == 3 || method == 4 ? fast_ops : ops;
    };
    StatusOr<std::unique_ptr<ActorRunner>> runner =
        ChainRunner(comm, parex_group, fast_ops, threads);
    if (!runner.ok()) {
      std::fprintf(stderr, "%s\n", runner.status().ToString().c_str());
      return 1;
    }
    parex_buffer = Tensor(DType::kFP32, {count});
    direct_buffer = Tensor(DType::kFP32, {count});
    std::vector<float> raw(count), ring_buffer(count);
    mpi_buffer.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      parex_buffer.data<float>()[i] = direct_buffer.data<float>()[i] = raw[i] =
          ring_buffer[i] = mpi_buffer[i] = 1.0f / (1 + i % 7);
    }
    gloo::rendezvous::PrefixStore ring_store("ring" + std::to_string(bytes),
                                             file_store);
    auto ring_context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ring_context->setTimeout(std::chrono::seconds(120));
    std::unique_ptr<gloo::AllreduceRingChunked<float>> ring;
    if (raw_gloo) {
      ring_context->connectFullMesh(ring_store, device);
      ring = std::make_unique<gloo::AllreduceRingChunked<float>>(
          ring_context, std::vector<float*>{ring_buffer.data()},
          static_cast<int>(count));
    }
    auto run = [&](int method) -> Status {
      if (method == 1) {
        ring->run();
        return Status::Ok();
      }
      if (method == 3) return comm.AllReduce("direct", direct_group);
      if (method == 4) {
        MPI_Allreduce(MPI_IN_PLACE, mpi_buffer.data(), static_cast<int>(count),
                      MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        return Status::Ok();
      }
      gloo::AllreduceOptions a(context);
      a.setOutput(raw.data(), raw.size());
      a.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(
              &gloo::sum<float>));
      a.setTag(1);
      gloo::allreduce(a);
      return Status::Ok();
    };
    std::vector<double> seconds[kNumMethods];
    for (int round = -1; round < o.rounds; ++round) {  // round -1: warm-up
      for (int k = 0; k < num_methods; ++k) {
        const int method = (k + std::max(round, 0)) % num_methods;
        if (!raw_gloo && (method == 1 || method == 2)) continue;
        barrier();
        const auto start = Clock::now();
        for (int i = 0; i < (method == 0 ? 1 : ops_of(method)); ++i) {
          if (Status s = method == 0 ? (*runner)->Run(step++) : run(method);
              !s.ok()) {
            std::fprintf(stderr, "%s: %s\n", kMethods[method],
                         s.ToString().c_str());
            return 1;
          }
        }
        const double t =
            std::chrono::duration<double>(Clock::now() - start).count();
        if (round >= 0) seconds[method].push_back(t / ops_of(method));
      }
    }
    if (rank == 0) {
      for (int m = 0; m < num_methods; ++m) {
        std::printf("%lld %s %.9g\n", static_cast<long long>(bytes),
                    kMethods[m], bench::Median(seconds[m]));
      }
      std::fflush(stdout);
    }
  }
  barrier();
  if (Status s = cluster.Leave(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

// Starts argv; returns its pid (or -1), its stdout into `out` when not empty.
pid_t Spawn(const std::vector<std::string>& args, const std::string& out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!out.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  std::vector<char*> argv;
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Waits for every pid, at most `limit`; kills the rest after it. True when
// all exited 0.
bool WaitAll(std::vector<pid_t> pids, std::chrono::seconds limit,
             const std::string& what) {
  const auto deadline = Clock::now() + limit;
  bool ok = true;
  while (!pids.empty()) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      auto it = std::find(pids.begin(), pids.end(), done);
      if (it == pids.end()) continue;
      pids.erase(it);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr,
                     "%s: a process failed (status %d); stopping the others\n",
                     what.c_str(), status);
        ok = false;
        for (pid_t p : pids) kill(p, SIGTERM);
      }
      continue;
    }
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "%s: still running after %lld s; killed\n",
                   what.c_str(), static_cast<long long>(limit.count()));
      for (pid_t p : pids) kill(p, SIGKILL);
      ok = false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ok;
}

// "bytes method seconds" lines into result[bytes][method].
void ReadResults(const std::string& path,
                 std::map<int64_t, std::map<std::string, double>>* r) {
  std::ifstream in(path);
  long long bytes;
  std::string method;
  double seconds;
  while (in >> bytes >> method >> seconds) (*r)[bytes][method] = seconds;
}

std::string HumanBytes(int64_t b) {
  if (b >= (1 << 20)) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b >> 10) + " KiB";
}

int Driver(const Options& o, const std::string& self) {
  const std::string peer =
      o.mpi_peer.empty()
          ? (fs::path(self).parent_path() / "mpi_allreduce_peer").string()
          : o.mpi_peer;
  const bool backend_mpi = o.backend == "mpi";
  const bool mpi = !o.no_mpi && !backend_mpi && fs::exists(peer);
  if (!o.no_mpi && !backend_mpi && !mpi) {
    std::printf(
        "(no %s: OpenMPI's column is left out; build with libopenmpi-dev)\n",
        peer.c_str());
  }
  std::printf(
      "cross-process all-reduce, fp32 in place, 127.0.0.1, %d rounds, median "
      "per op\n",
      o.rounds);
  std::printf(
      "busbw = bytes/time * 2(N-1)/N in GB/s; /peer = parex's busbw over the "
      "peer's\n");
  if (backend_mpi) {
    std::printf(
        "collective MPI: workers started by mpirun; parex's path is its MPI "
        "communicator, mpi = MPI_Allreduce called directly (OpenMPI picks "
        "the transport: shared memory here)\n");
  }
  bool all_ok = true;
  for (int n : o.ranks) {
    char tmpl[] = "/tmp/parex_allreduce_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    const fs::path dir = tmpl;
    fs::create_directory(dir / "store");
    std::ofstream(dir / "secret") << "allreduce-bench-secret-0123456789\n";
    fs::permissions(dir / "secret",
                    fs::perms::owner_read | fs::perms::owner_write);
    {
      std::ofstream t(dir / "topology.pbtxt");
      t << "cluster: \"bench\"\nsecret_file: \"secret\"\n"
        << (backend_mpi ? "collective: MPI\n" : "");
      for (int r = 0; r < n; ++r) {
        t << "node { name: \"r" << r
          << "\" host: \"127.0.0.1\" port: " << testing::FreePort()
          << " places: \"cpu:1\" }\n";
      }
    }
    std::vector<pid_t> pids;
    for (int r = 0; r < (backend_mpi ? 1 : n); ++r) {
      std::vector<std::string> args = {
          self,          "--worker",
          "--topology",  (dir / "topology.pbtxt").string(),
          "--node",      "r" + std::to_string(r),
          "--store",     (dir / "store").string(),
          "--min-bytes", std::to_string(o.min_bytes),
          "--max-bytes", std::to_string(o.max_bytes),
          "--rounds",    std::to_string(o.rounds)};
      if (o.no_gloo) args.push_back("--no-gloo");
      if (backend_mpi) {
        // One mpirun starts the n workers; each is the node of its rank.
        // Not bound to cores (mpirun's default for 2): Gloo's peer runs a
        // thread of its own, as in the Gloo rows.
        args.insert(args.begin(),
                    {o.mpirun, "--allow-run-as-root", "--oversubscribe",
                     "--bind-to", o.bind, "-np", std::to_string(n)});
      }
      const pid_t pid = Spawn(args, r == 0 ? (dir / "gloo.txt").string() : "");
      if (pid < 0) {
        std::perror("posix_spawn");
        return 1;
      }
      pids.push_back(pid);
    }
    all_ok &= WaitAll(pids, std::chrono::seconds(900),
                      std::to_string(n) + " workers");
    std::map<int64_t, std::map<std::string, double>> results;
    ReadResults((dir / "gloo.txt").string(), &results);
    if (mpi) {
      std::vector<std::string> args = {
          o.mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
          std::to_string(n),
          // TCP over the loopback, as between machines
          // (not shared memory).
          "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo", peer,
          std::to_string(o.min_bytes), std::to_string(o.max_bytes),
          std::to_string(o.rounds)};
      const pid_t pid = Spawn(args, (dir / "mpi.txt").string());
      if (pid < 0 || !WaitAll({pid}, std::chrono::seconds(900), "mpirun")) {
        all_ok = false;
      }
      ReadResults((dir / "mpi.txt").string(), &results);
    }
    const double bus = 2.0 * (n - 1) / n;
    std::printf("\n%d processes\n", n);
    std::printf("%9s %10s %13s %10s %13s %10s %10s %13s %10s\n", "size",
                "parex", "parex-direct", "gloo-ring", "gloo-unbound", "mpi",
                "/gloo-ring", "/gloo-unbound", "/mpi");
    for (const auto& [bytes, row] : results) {
      auto busbw = [&](const char* m) {
        auto it = row.find(m);
        return it == row.end() || it->second <= 0
                   ? 0.0
                   : bytes / it->second * bus / 1e9;
      };
      auto ratio = [&](const char* m) {
        const double p = busbw("parex"), q = busbw(m);
        return q > 0 ? p / q : 0.0;
      };
      // A cell not measured (--no-gloo, --no-mpi) is "-".
      auto cell = [](double v, int width, int digits) {
        char text[32];
        if (v > 0) {
          std::snprintf(text, sizeof(text), "%*.*f", width, digits, v);
        } else {
          std::snprintf(text, sizeof(text), "%*s", width, "-");
        }
        return std::string(text);
      };
      std::printf("%9s %s %s %s %s %s %s %s %s\n", HumanBytes(bytes).c_str(),
                  cell(busbw("parex"), 10, 3).c_str(),
                  cell(busbw("parex-direct"), 13, 3).c_str(),
                  cell(busbw("gloo-ring"), 10, 3).c_str(),
                  cell(busbw("gloo-unbound"), 13, 3).c_str(),
                  cell(busbw("mpi"), 10, 3).c_str(),
                  cell(ratio("gloo-ring"), 10, 2).c_str(),
                  cell(ratio("gloo-unbound"), 13, 2).c_str(),
                  cell(ratio("mpi"), 10, 2).c_str());
    }
    std::fflush(stdout);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace parex

int main(int argc, char** argv) {
  parex::Options o;
  CLI::App app{
      "Cross-process all-reduce: parex's collective actor vs raw Gloo vs "
      "OpenMPI"};
  app.add_option("--ranks", o.ranks, "process counts")->delimiter(',');
  app.add_option("--min-bytes", o.min_bytes, "smallest size per rank");
  app.add_option("--max-bytes", o.max_bytes,
                 "largest size per rank (x4 steps)");
  app.add_option("--rounds", o.rounds, "rounds per size (median)");
  app.add_option("--mpirun", o.mpirun, "OpenMPI's launcher");
  app.add_option("--mpi-peer", o.mpi_peer, "the MPI peer program");
  app.add_flag("--no-mpi", o.no_mpi, "leave OpenMPI out");
  app.add_option("--backend", o.backend,
                 "the topology's collective: gloo (parex's Gloo against Gloo "
                 "and OpenMPI's TCP) or mpi (workers under mpirun: parex's "
                 "MPI communicator against MPI called directly and Gloo)")
      ->check(CLI::IsMember({"gloo", "mpi"}));
  app.add_option("--bind-to", o.bind,
                 "--backend mpi: mpirun's --bind-to (none: the Gloo peer's "
                 "thread is free to run beside the worker; core)");
  app.add_flag("--no-gloo", o.no_gloo,
               "--backend mpi: leave raw Gloo out (its transport thread "
               "shares each rank's core under --bind-to core)");
  app.add_flag("--worker", o.worker)->group("");
  app.add_option("--topology", o.topology)->group("");
  app.add_option("--node", o.node)->group("");
  app.add_option("--store", o.store)->group("");
  CLI11_PARSE(app, argc, argv);
  if (o.worker) return parex::Worker(o);
  return parex::Driver(o, parex::fs::read_symlink("/proc/self/exe").string());
}
