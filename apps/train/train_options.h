// How `parex train` / `parex node` train, as the command line set it
// (apps/parex_main.cc parses it into TrainOptions), and the options' own
// checks. Everything in apps/train/ reads its settings from here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace parex::train {

struct TrainOptions {
  std::string model = "digits_mlp";
  // A user's program instead of an example (apps/cli/program_job.h): the
  // main program (a file or a directory with main.pdmodel), its startup
  // program and/or a directory of parameter files, NAME=FILE.npy per fed
  // variable, the loss ("": the one Fluid marked).
  std::string program, startup, params, loss;
  std::vector<std::string> data;
  std::string
      lr_schedule;  // --program's rate per step (lr_schedule.h); "": as it is
  std::vector<std::string>
      eval_data;                   // NAME=FILE.npy: evaluated after each epoch
  std::vector<std::string> fetch;  // more variables to report per step
  bool shuffle = true;             // false: the rows in file order every epoch
  // BuildStrategy::sync_batch_norm: batch statistics over every place.
  bool sync_batch_norm = false;
  bool channels_last = true;  // on CPU places (BuildStrategy::channels_last)
  // Parameter-server training: 0 is sync mode; K >= 1 is async mode, where
  // a trainer trains step s on the parameters of step s - K (no wait for
  // the round trip; actors/comm/pserver_communicator.h).
  int max_staleness = 0;
  // ExecutionStrategy::cuda_graphs (--no-cuda-graphs turns it off).
  bool cuda_graphs = true;
  // Checkpoints (checkpoint.h): written into checkpoint_dir every
  // checkpoint_every steps (0: only at the end and on SIGINT/SIGTERM), the
  // newest `keep` kept; `resume` continues from the newest one in a dir.
  std::string checkpoint_dir, resume;
  int64_t checkpoint_every = 0;
  int keep = 3;
  std::string places = "cpu:2";
  // Unset: the model's default. Set: checked up front (epochs and batch
  // positive, lr finite and positive), a usage error otherwise.
  std::optional<int> epochs;
  std::optional<int64_t> batch;  // split over the places
  std::optional<double> lr;
  std::string mode = "allreduce";
  int seed = 1;
  std::string trace;  // Chrome trace JSON of the first trace_steps steps
  int trace_steps = 20;
  int64_t trace_from = 0;  // the first step traced (after a warm-up, say)
  std::string save;        // "": parex-<model> in the working directory
  // The training programs written here before training (main.pdmodel,
  // startup.pdmodel), to run them elsewhere (Paddle); "": not written.
  std::string save_programs;
  std::string data_dir;  // UCI housing and digits CSVs
  std::string fashion_dir;
  bool progress = true;          // a live line when stdout is a terminal
  std::optional<int64_t> steps;  // stop after this many steps in all
  std::string metrics;           // JSON lines: one per step
  // Dense all-reduces packed into buckets of at most this many bytes (0:
  // one call per gradient). Unset: off in one process (its all-reduce is
  // cheap per call), kClusterBucketBytes across nodes (a Gloo call costs a
  // round trip or more).
  std::optional<int64_t> fuse_bucket_bytes;
  // Scheduler workers; unset: this machine's cores (parex launch gives
  // each node it starts its share of them).
  std::optional<int> threads;
  // parex node: the topology file and this node's name in it (the places
  // are the node's; --save and --metrics are written by rank 0 only).
  std::string topology;
  std::string node;
};
constexpr int64_t kClusterBucketBytes = 1 << 20;

// The options' own checks, before anything is loaded: counts in range,
// --checkpoint-every with a directory, --program's options only with it and
// --lr only without. InvalidArgument naming the option.
Status CheckTrainOptions(const TrainOptions& o);

// "{node}" in a path becomes the node's name.
std::string ForNode(std::string path, const std::string& node);

}  // namespace parex::train
