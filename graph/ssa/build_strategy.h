// BuildStrategy: how the multi-device pass builds the SSA graph (Fluid's
// BuildStrategy: gradient exchange mode, loss-gradient scale, fused buckets,
// sequential execution, memory_optimize; the multi-node fields reserved).
#pragma once

#include <cstdint>
#include <string>

namespace parex {

struct BuildStrategy {
  enum class ReduceStrategy { kAllReduce, kReduce };
  enum class GradientScale { kCoeffNumDevice, kOne, kCustomized };

  ReduceStrategy reduce = ReduceStrategy::kAllReduce;
  // loss@GRAD on each place: 1/N (CoeffNumDevice), 1 (One), or fed by the
  // user (Customized: no scale_loss_grad op, loss@GRAD is a graph input).
  GradientScale gradient_scale = GradientScale::kCoeffNumDevice;
  // Dense all-reduces packed into buckets of at most `fuse_bucket_bytes`
  // (a larger gradient gets a bucket of its own), in production order.
  bool fuse_all_reduce_ops = false;
  int64_t fuse_bucket_bytes = 25 * 1024 * 1024;  // PyTorch DDP's 25 MiB
  // Computation ops on each place run in program order (control vars).
  bool enable_sequential_execution = false;
  // Reduce mode on CPU places: the places share each parameter's buffer,
  // so no broadcast is inserted (the owner's optimizer updates it for all).
  bool share_cpu_parameters = true;
  // ... and an optimizer op (sgd, momentum, adam) whose parameter has at
  // least this many elements runs as one slice per place, each updating a
  // contiguous range of the elements, so that one large parameter does not
  // leave the other places idle (issue 13); 0 never slices.
  int64_t slice_optimizer_min_numel = 16384;
  // memory_optimize: plan buffer reuse for temporaries; -1 extents (the
  // batch) are sized with `memory_plan_batch_per_place`.
  bool memory_optimize = false;
  int64_t memory_plan_batch_per_place = 64;
  // sync_batch_norm: training batch norms use the statistics of every
  // place's rows (graph/builder/sync_batch_norm.h), so N places train as one
  // place with the whole batch. A program's own sync_batch_norm ops are
  // synchronised either way.
  bool sync_batch_norm = false;
  // channels_last: on CPU places, a training program's convolutions, the
  // batch norms, pools and element-wise ops between them and their gradient
  // ops run channels-last (NHWC: graph/builder/channels_last.h's training
  // rewrite, before the graph is built), so oneDNN reads and writes them as
  // they lie instead of reordering every call. The fetched vars keep their
  // layout. `parex train` sets it (--no-channels-last: off).
  bool channels_last = false;
  // When set, the built graph is written there as Graphviz dot.
  std::string debug_graphviz_path;
  // Multi-node (DESIGN.md §4): the places of every node together, so that
  // kCoeffNumDevice scales the loss gradient by 1 / world_places (0: this
  // graph's places are all of them). The graph itself covers this node's
  // places; its collectives go through a communicator that spans the nodes.
  int world_places = 0;
  // This process's rank among the trainers and their count (reported only).
  int num_trainers = 1;
  int trainer_id = 0;
  // Parameter-server training (issue 32): the program is placed
  // (graph/builder/placement.h) and this graph is node `placed_node`'s part
  // (a pserver when `placed_pserver`): only the ops placed there are built.
  // On a trainer, each gradient of a parameter that lives on the pservers is
  // sent to them as soon as it is made (a "send": a reduce), and after
  // every gradient has gone the parameters come back ("recv": broadcasts,
  // in gradient order). On a pserver (one place), the gradients of the
  // parameters it holds arrive first ("recv": reduces), its update ops run,
  // and the parameters leave last ("send": broadcasts). The communicator
  // knows who holds what (actors/comm/pserver_communicator.h). Empty: not
  // a placed program.
  std::string placed_node;
  bool placed_pserver = false;
};

const char* ReduceStrategyName(BuildStrategy::ReduceStrategy s);
const char* GradientScaleName(BuildStrategy::GradientScale s);

}  // namespace parex
