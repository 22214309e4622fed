#include "apps/train/cluster_session.h"

#include <sched.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "actors/comm/mpi_communicator.h"
#include "apps/exit_codes.h"
#include "base/digest.h"
#include "proto/program_io.h"

namespace parex::train {

StatusOr<std::unique_ptr<ClusterSession>> ClusterSession::Join(
    const std::string& cmd, const Topology& topology, const std::string& node,
    const Program& main, const Program& startup, const std::string& options) {
  std::map<std::string, std::string> identity;
  identity["program"] = Sha256Hex(SerializeProgramBinary(main.proto()) + '\0' +
                                  SerializeProgramBinary(startup.proto()));
  identity["options"] = options;
  PAREX_ASSIGN_OR_RETURN(std::unique_ptr<Cluster> cluster,
                         Cluster::Join(topology, node, identity));
  // Until the executor exists, a lost peer only bounds the wait.
  cluster->SetLostHandler([cmd](const Status& s) {
    ExitUnlessEndedWithin(cmd, s, std::chrono::seconds(2));
  });
  return std::unique_ptr<ClusterSession>(
      new ClusterSession(cmd, node, topology.path, std::move(cluster)));
}

ClusterSession::ClusterSession(std::string cmd, std::string node,
                               std::string path,
                               std::unique_ptr<Cluster> cluster)
    : cmd_(std::move(cmd)),
      node_(std::move(node)),
      topology_path_(std::move(path)),
      cluster_(std::move(cluster)) {}

void ClusterSession::Configure(int world, int first_place, BuildStrategy* build,
                               ExecutionStrategy* exec,
                               const PserverRun* pserver_run) const {
  build->world_places = world;
  build->num_trainers = cluster_->size();
  build->trainer_id = cluster_->rank();
  exec->communicator = cluster_->MakeCommunicator();
  exec->first_place = first_place;
  if (pserver_run != nullptr) {
    build->num_trainers = static_cast<int>(pserver_run->trainer_ranks().size());
    build->placed_node = node_;
    build->placed_pserver = pserver_run->pserver();
    build->reduce = BuildStrategy::ReduceStrategy::kAllReduce;
    exec->communicator = cluster_->MakePserverCommunicator(
        pserver_run->shards(), pserver_run->max_staleness());
  }
}

void ClusterSession::AbortOnLoss(ParallelExecutor* executor) {
  const std::string cmd = cmd_;
  cluster_->SetLostHandler([executor, cmd](const Status& s) {
    executor->Abort(s);
    ExitUnlessEndedWithin(cmd, s, std::chrono::seconds(2));
  });
}

void ClusterSession::ClearLostHandler() {
  if (cluster_ != nullptr) cluster_->SetLostHandler(nullptr);
}

void ClusterSession::FailAndExit(const Status& status, int code, bool agreed) {
  Fail(cmd_, status, code);
  // When ending together fails (a peer did not agree after all, or is
  // gone), the peers are told.
  if (!agreed || !cluster_->FailTogether().ok()) {
    cluster_->AnnounceFailure(status);
  }
  std::fflush(nullptr);
  std::_Exit(code);
}

Status ClusterSession::BroadcastPersistables(
    Scope* scope, const std::vector<std::string>& names) {
  return cluster_->BroadcastPersistables(scope, names);
}

Status ClusterSession::CheckSameParameters(const std::string& digest) {
  Tensor mine(DType::kUInt8, {static_cast<int64_t>(digest.size())});
  std::copy(digest.begin(), digest.end(), mine.data<uint8_t>());
  Tensor theirs = mine.Clone();
  PlaceTensors one = {&theirs};
  PAREX_RETURN_IF_ERROR(
      cluster_->cross().Broadcast("parameter digest", one, 0));
  if (std::memcmp(mine.raw_data(), theirs.raw_data(), mine.bytes()) != 0) {
    return Internal("the parameters of node '" + node_ +
                    "' differ from rank 0's after training");
  }
  return Status::Ok();
}

void ClusterSession::PrintBanner(int first_place, int places, int world,
                                 int threads) const {
  std::printf(
      "parex node: %s, rank %d of %d nodes (%s), places %d-%d of %d, %d "
      "worker%s%s\n",
      node_.c_str(), cluster_->rank(), cluster_->size(), topology_path_.c_str(),
      first_place, first_place + places - 1, world, threads,
      threads == 1 ? "" : "s", PinnedCpus().c_str());
}

std::map<std::string, std::string> ClusterSession::TraceMetadata() const {
  std::map<std::string, std::string> metadata;
  metadata["parex_node"] = node_;
  metadata["parex_rank"] = std::to_string(cluster_->rank());
  metadata["parex_clock_offset_us"] =
      std::to_string(cluster_->clock_offset_us());
  metadata["parex_clock_rtt_us"] = std::to_string(cluster_->clock_rtt_us());
  return metadata;
}

std::string HandshakeOptions(const TrainOptions& o, int64_t batch, int epochs,
                             const BuildStrategy& build, bool pservers) {
  return " --mode " + o.mode + " --batch " + std::to_string(batch) +
         " --epochs " + std::to_string(epochs) + " --steps " +
         (o.steps ? std::to_string(*o.steps) : "all") + " --seed " +
         std::to_string(o.seed) + (o.shuffle ? "" : " --no-shuffle") +
         (o.sync_batch_norm ? " --sync-batch-norm" : "") +
         (o.channels_last ? "" : " --no-channels-last") + " --fuse-buckets " +
         std::to_string(build.fuse_all_reduce_ops ? build.fuse_bucket_bytes
                                                  : 0) +
         " --checkpoint-every " + std::to_string(o.checkpoint_every) +
         // With pservers every node writes its part of a checkpoint and
         // reads it back: all of them checkpoint, or none.
         (pservers && !o.checkpoint_dir.empty() ? " --checkpoint-dir" : "") +
         (pservers && !o.resume.empty() ? " --resume" : "") +
         (o.max_staleness > 0
              ? " --max-staleness " + std::to_string(o.max_staleness)
              : "");
}

StatusOr<std::string> NodeOfThisProcess(const Topology& topology,
                                        const std::string& node,
                                        const std::string& option) {
  const std::optional<MpirunRank> started = StartedByMpirun();
  if (topology.backend == "mpi" && !started.has_value()) {
    return FailedPrecondition(
        topology.path + ": collective MPI: its nodes are started by mpirun (" +
        "mpirun -np " + std::to_string(topology.nodes.size()) +
        " parex node --topology FILE ...; each process is the node of its "
        "rank)");
  }
  if (topology.backend != "mpi") {
    if (node.empty()) {
      return InvalidArgument(
          option +
          " is required (it may be left out only under mpirun, with a "
          "topology of collective MPI)");
    }
    return node;
  }
  if (started->size != static_cast<int>(topology.nodes.size())) {
    return InvalidArgument(
        topology.path + ": " + std::to_string(topology.nodes.size()) +
        " nodes, but mpirun started " + std::to_string(started->size) +
        " processes (mpirun -np " + std::to_string(topology.nodes.size()) +
        ")");
  }
  const std::string& mine = topology.nodes[started->rank].name;
  if (!node.empty() && node != mine) {
    return InvalidArgument(
        option + " " + node + ": mpirun started this process as rank " +
        std::to_string(started->rank) + ", which is node '" + mine + "' in " +
        topology.path + " (leave " + option + " out under mpirun)");
  }
  return mine;
}

void ExitUnlessEndedWithin(const std::string& cmd, const Status& status,
                           std::chrono::milliseconds grace) {
  std::thread([cmd, status, grace] {
    std::this_thread::sleep_for(grace);
    Fail(cmd, status);
    std::fflush(nullptr);
    std::_Exit(kExitRuntime);
  }).detach();
}

std::vector<FeedMap> NodeShareOfBatch(const FeedMap& share, int64_t rows,
                                      int first_place, int n, int world) {
  std::vector<FeedMap> feeds(n);
  const int64_t chunk = rows / world;
  const int64_t first_row = first_place * chunk;  // the share's row 0
  for (const auto& [name, value] : share) {
    for (int p = 0; p < n; ++p) {
      const int q = first_place + p;
      const int64_t begin = q * chunk;
      const int64_t end = q == world - 1 ? rows : begin + chunk;
      feeds[p][name] = value.Slice(begin - first_row, end - first_row);
    }
  }
  return feeds;
}

std::string CpuList(const std::vector<int>& cpus) {
  std::string list;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!list.empty()) list += ",";
    list += std::to_string(cpus[i]);
    if (j > i) list += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return (cpus.size() > 1 ? "cpus " : "cpu ") + list;
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::string PinnedCpus() {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.empty() ||
      cpus.size() >= static_cast<size_t>(std::thread::hardware_concurrency())) {
    return "";
  }
  return ", on " + CpuList(cpus);
}

}  // namespace parex::train
