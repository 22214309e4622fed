// parex train / parex node: works out where and what this process trains
// (its places, the job: an example or a user's program, its outputs; for a
// node, its cluster) and hands the run to a TrainSession (apps/train/).
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "actors/comm/mpi_communicator.h"
#include "apps/cli/cli.h"
#include "apps/cli/program_job.h"
#include "apps/reader.h"
#include "apps/train/cluster_session.h"
#include "apps/train/pserver_run.h"
#include "apps/train/train_job.h"
#include "apps/train/train_session.h"
#include "base/logging.h"

namespace parex::cli {
namespace {

using train::TrainJob;
using train::TrainPlan;

// Node `node`'s rank in `topology`; a usage error naming the nodes when it
// has none of that name.
StatusOr<int> NodeRank(const Topology& topology, const std::string& node) {
  const int rank = topology.Rank(node);
  if (rank >= 0) return rank;
  std::string names;
  for (const TopologyNode& n : topology.nodes)
    names += (names.empty() ? "" : ", ") + n.name;
  return NotFound(topology.path + ": no node '" + node + "' (nodes: " + names +
                  ")");
}

// Under mpirun, a node's default workers are its share of the CPUs it may
// run on, among the ranks on this machine (as parex launch gives each node
// its share): spinning workers of several processes on the same cores only
// take turns (and MPI's waiting polls too). 0 (the executor's default) when
// not started by mpirun.
int MpirunThreadShare() {
  const std::optional<MpirunRank> started = StartedByMpirun();
  if (!started.has_value()) return 0;
  const size_t allowed = train::AllowedCpus().size();
  const int cpus = allowed > 0
                       ? static_cast<int>(allowed)
                       : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cpus / started->local_size);
}

// Parameter-server training (a topology with pserver nodes): the program
// placed over the trainers and pservers; a pserver runs its part on its
// first place. Errors are the user's (a setup it cannot train).
Status PlaceForPservers(const TrainOptions& o, const Topology* topology,
                        TrainJob* job, TrainPlan* plan) {
  if (topology == nullptr || !train::HasPservers(*topology)) {
    if (o.max_staleness > 0) {
      return InvalidArgument(
          "--max-staleness needs parameter servers (a topology with pserver "
          "nodes)");
    }
    return Status::Ok();
  }
  if (o.sync_batch_norm) {
    return InvalidArgument(
        "--sync-batch-norm needs collective mode; the topology has pserver "
        "nodes");
  }
  PAREX_ASSIGN_OR_RETURN(
      plan->pserver_run,
      train::PserverRun::Plan(&job->main, *topology, o.node, o.max_staleness));
  if (plan->pserver_run->pserver()) plan->places.resize(1);
  return Status::Ok();
}

// This process's places (--places, or its node's in the topology), its rank
// and the strategies the options set; the exit code of a failure (reported),
// else nothing.
std::optional<int> PlanPlaces(const std::string& cmd, const TrainOptions& o,
                              const Topology* topology, TrainPlan* plan) {
  std::string places_text = o.places;
  std::string places_of = "--places";
  int rank = 0;
  if (topology != nullptr) {
    StatusOr<int> r = NodeRank(*topology, o.node);
    if (!r.ok()) return Fail(cmd, r.status(), kExitUsage);
    rank = *r;
    places_text = topology->nodes[rank].places_text;
    places_of = topology->path + ": node '" + o.node + "': places";
  }
  // Before anything is loaded or joined: places this process cannot run.
  StatusOr<Parallelism> parallel =
      ParseParallelism(places_text, o.mode, /*to_run=*/true, places_of);
  if (!parallel.ok()) {
    return Fail(cmd, parallel.status(), PlacesExitCode(parallel.status()));
  }
  plan->places = parallel->places;
  plan->build = parallel->build;
  plan->world = topology != nullptr ? topology->TotalPlaces()
                                    : static_cast<int>(plan->places.size());
  plan->first_place = topology != nullptr ? topology->FirstPlace(rank) : 0;
  plan->writer = rank == 0;  // --save, --metrics, checkpoints
  if (Status s = train::CheckTrainOptions(o); !s.ok()) {
    return Fail(cmd, s, kExitUsage);
  }
  const int64_t bucket = o.fuse_bucket_bytes.value_or(
      topology != nullptr ? kClusterBucketBytes : 0);
  plan->build.fuse_all_reduce_ops = bucket > 0;
  if (bucket > 0) plan->build.fuse_bucket_bytes = bucket;
  plan->build.sync_batch_norm = o.sync_batch_norm;
  plan->build.channels_last = o.channels_last;
  plan->exec.num_threads =
      o.threads ? *o.threads : (topology != nullptr ? MpirunThreadShare() : 0);
  plan->exec.cuda_graphs = o.cuda_graphs;
  return std::nullopt;
}

// The job's epochs and batch (usage errors when the batch does not fit the
// places or the rows), its outputs, and the reader of its rows.
StatusOr<BatchReader> PlanBatches(const TrainOptions& o,
                                  const Topology* topology, const TrainJob& job,
                                  TrainPlan* plan, bool* usage) {
  plan->epochs = o.epochs.value_or(job.default_epochs);
  plan->batch = o.batch.value_or(job.default_batch);
  *usage = true;
  if (plan->batch < plan->world) {
    return InvalidArgument(
        "--batch " + std::to_string(plan->batch) + " is smaller than the " +
        std::to_string(plan->world) + " places it is split over");
  }
  *usage = false;
  PAREX_RETURN_IF_ERROR(train::SetOutputs(o, topology != nullptr ? o.node : "",
                                          job.default_save, plan));
  PAREX_ASSIGN_OR_RETURN(
      BatchReader reader,
      BatchReader::Create(
          job.columns, {plan->batch, o.shuffle, static_cast<uint64_t>(o.seed),
                        /*drop_last=*/false}));
  if (reader.num_rows() < plan->batch) {
    *usage = true;
    return InvalidArgument(
        "--batch " + std::to_string(plan->batch) + " is larger than the " +
        std::to_string(reader.num_rows()) + " training rows");
  }
  return reader;
}

}  // namespace

// RunTrain and RunNode: `topology` set for one node of a cluster.
int TrainMain(const std::string& cmd, const TrainOptions& o,
              const Topology* topology) {
  TrainPlan plan;  // the wall time starts here
  if (std::optional<int> failed = PlanPlaces(cmd, o, topology, &plan)) {
    return *failed;
  }
  const auto load_start = train::Clock::now();
  bool usage = false;
  StatusOr<TrainJob> job =
      o.program.empty() ? train::ExampleJob(o, &usage) : ProgramJob(o, &usage);
  if (!job.ok()) {
    return Fail(cmd, job.status(), usage ? kExitUsage : kExitRuntime);
  }
  LogInfo(Subsystem::kApp,
          "loaded " + std::to_string(job->columns[0].second.dim(0)) +
              " train rows in " + std::to_string(train::Seconds(load_start)) +
              " s");
  if (!o.save_programs.empty()) {
    if (Status s = train::SavePrograms(*job, o.save_programs); !s.ok()) {
      return Fail(cmd, s);
    }
  }
  StatusOr<BatchReader> reader = PlanBatches(o, topology, *job, &plan, &usage);
  if (!reader.ok()) {
    return Fail(cmd, reader.status(), usage ? kExitUsage : kExitRuntime);
  }
  if (Status s = PlaceForPservers(o, topology, &*job, &plan); !s.ok()) {
    return Fail(cmd, s, kExitUsage);
  }
  // A node meets its peers once it knows its program: the handshake
  // compares the program's fingerprint and the options that shape training.
  std::unique_ptr<train::ClusterSession> cluster;
  if (topology != nullptr) {
    StatusOr<std::unique_ptr<train::ClusterSession>> joined =
        train::ClusterSession::Join(
            cmd, *topology, o.node, job->main, job->startup,
            job->identity +
                train::HandshakeOptions(o, plan.batch, plan.epochs, plan.build,
                                        plan.pserver_run != nullptr));
    if (!joined.ok()) return Fail(cmd, joined.status());
    cluster = std::move(*joined);
    cluster->Configure(plan.world, plan.first_place, &plan.build, &plan.exec,
                       plan.pserver_run.get());
  }
  train::TrainSession session(cmd, o, std::move(*job), std::move(*reader),
                              std::move(plan), std::move(cluster));
  return session.Run();
}

int RunTrain(const TrainOptions& o) { return TrainMain("train", o, nullptr); }

int RunNode(const TrainOptions& options) {
  StatusOr<Topology> topology =
      LoadTopology(options.topology, /*allow_pservers=*/true);
  if (!topology.ok()) return Fail("node", topology.status(), kExitUsage);
  TrainOptions o = options;
  StatusOr<std::string> node =
      train::NodeOfThisProcess(*topology, o.node, "--node");
  if (!node.ok()) return Fail("node", node.status(), kExitUsage);
  o.node = *node;
  // mpirun merges its processes' output into one terminal: rank 0 alone
  // draws the live line.
  if (StartedByMpirun().has_value() && topology->Rank(o.node) != 0) {
    o.progress = false;
  }
  return TrainMain("node", o, &*topology);
}

}  // namespace parex::cli
