// This process as one node of a cluster (parex node): joining it with what
// the nodes must agree on, the lost-peer handler (first bounding the wait,
// then aborting the executor's step), the persistables broadcast from rank
// 0, the check that every node ends with rank 0's parameters, and leaving
// together. Also what a node's lines and batches are: its pinned CPUs, its
// share of a global batch, the options the handshake compares.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/cluster.h"
#include "actors/executor/parallel_executor.h"
#include "apps/train/pserver_run.h"
#include "apps/train/train_options.h"
#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/feed.h"
#include "kernels/scope.h"
#include "proto/topology_io.h"

namespace parex::train {

// The cluster a node trains in. Once joined, the node's errors end the
// process at once (FailAndExit): a call on another thread may still wait
// inside Gloo, which cannot be cancelled, and teardown would wait with it;
// files are written atomically, so nothing saved is lost. (PyTorch's NCCL
// watchdog ends its process the same way.) Not thread-safe, but for the
// lost-peer handler, which runs on the cluster's thread.
class ClusterSession {
 public:
  // Joins `topology` as `node`; the handshake compares the fingerprint of
  // `main` and `startup` and `options` (the job's identity and
  // HandshakeOptions). Until AbortOnLoss, a lost peer only bounds the wait
  // (ExitUnlessEndedWithin, 2 s). `cmd` names the command in errors.
  static StatusOr<std::unique_ptr<ClusterSession>> Join(
      const std::string& cmd, const Topology& topology, const std::string& node,
      const Program& main, const Program& startup, const std::string& options);
  ~ClusterSession() { ClearLostHandler(); }

  Cluster* cluster() const { return cluster_.get(); }
  // The build and execution settings of a node: `world` places in all, this
  // node's from `first_place`, its collectives through the cluster; in
  // parameter-server training (`pserver_run` given), its part of the
  // placed program and its sends and receives.
  void Configure(int world, int first_place, BuildStrategy* build,
                 ExecutionStrategy* exec,
                 const PserverRun* pserver_run = nullptr) const;

  // From now on a lost peer aborts the step in flight of `executor`; if the
  // training loop has not ended the process within 2 s (it waits inside a
  // Gloo call on this thread, the metrics' sum or a broadcast), the handler
  // ends it, naming the lost node. REQUIRES: ClearLostHandler before the
  // executor goes.
  void AbortOnLoss(ParallelExecutor* executor);
  void ClearLostHandler();

  // Prints `status` as the command's error, tells the peers, and ends the
  // process with `code`. An `agreed` failure is one every node reaches at
  // the same point from the same values (a diverged loss): the nodes end
  // together instead (Cluster::FailTogether), each with its own error.
  [[noreturn]] void FailAndExit(const Status& status, int code,
                                bool agreed = false);

  // Rank 0's persistables `names` in `scope` on every node.
  Status BroadcastPersistables(Scope* scope,
                               const std::vector<std::string>& names);
  // Every node must end with rank 0's parameters, bit for bit: Internal
  // naming this node when its `digest` (ParameterDigest) differs.
  Status CheckSameParameters(const std::string& digest);

  // "parex node: N, rank R of S nodes (PATH), places F-L of W, T workers".
  void PrintBanner(int first_place, int places, int world, int threads) const;
  // What `parex trace merge` aligns the nodes' traces by.
  std::map<std::string, std::string> TraceMetadata() const;

  // Leave together: no node closes its connections while a peer still
  // reads from them.
  Status Leave() { return cluster_->Leave(); }

 private:
  ClusterSession(std::string cmd, std::string node, std::string path,
                 std::unique_ptr<Cluster> cluster);

  const std::string cmd_, node_, topology_path_;
  std::unique_ptr<Cluster> cluster_;
};

// The options every node of a cluster must train with, as the handshake
// compares them: " --mode M --batch B --epochs E --steps S --seed N
// [--no-shuffle][ --sync-batch-norm] --fuse-buckets F --checkpoint-every C"
// (F 0: off), and with `pservers` whether the node checkpoints and resumes
// ("[ --checkpoint-dir][ --resume]": every node writes and reads its part).
std::string HandshakeOptions(const TrainOptions& o, int64_t batch, int epochs,
                             const BuildStrategy& build, bool pservers);

// A node whose peer was lost: unless the process ended within `grace` (its
// training loop saw the error and exited), it reports `status` as `cmd`'s
// error and ends here (kExitRuntime), whatever waits (a Gloo call cannot be
// cancelled).
void ExitUnlessEndedWithin(const std::string& cmd, const Status& status,
                           std::chrono::milliseconds grace);

// The node this process is in `topology`: `node` (given as `option`:
// parex node's "--node", parex.Cluster's "node"), else, under mpirun with
// a topology of collective MPI, the node of the process's rank. Under
// mpirun an MPI topology's ranks are its nodes: another count or node is
// InvalidArgument, and an MPI topology without mpirun FailedPrecondition,
// each saying how to start the nodes.
StatusOr<std::string> NodeOfThisProcess(const Topology& topology,
                                        const std::string& node,
                                        const std::string& option);

// A node's places' feeds from `share`, its rows of a global batch of `rows`
// rows (RowShare's range: the reader copied no other node's rows): for each
// of its `n` places, the rows place first_place + p would take in one
// process of `world` places (the last place of the world takes the rest).
std::vector<FeedMap> NodeShareOfBatch(const FeedMap& share, int64_t rows,
                                      int first_place, int n, int world);

// CPU numbers as "cpu 3" or "cpus 0-3,6": runs shortened, for the lines that
// say where a node runs. REQUIRES: ascending, not empty.
std::string CpuList(const std::vector<int>& cpus);

// The CPUs this process may run on (its affinity), ascending; empty when
// the system does not say.
std::vector<int> AllowedCpus();

// ", on cpu 0" / ", on cpus 2-3" when this process may run on fewer CPUs
// than the machine has (parex launch pins each node to its share), else "".
std::string PinnedCpus();

}  // namespace parex::train
