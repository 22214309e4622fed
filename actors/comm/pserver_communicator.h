// PserverCommunicator: a node's collectives in parameter-server training
// (issue 32; the graph's "send" and "recv" handles, graph/ssa/
// build_strategy.h's placed_node). Gradients go to the pservers that hold
// their parameters and the parameters come back, point to point over the
// cluster's communicator (one rank per node, Gloo's Send/Recv), never
// through a collective every node joins.
//
// A call moves the variables of one bucket (its name: theirs joined by
// '\n'), as one message per pair of nodes: the blocks of rows the pserver
// holds, in bucket order, packed.
// A trainer (its places, any number):
//   Reduce(grads): each gradient is summed over the node's places onto its
//     first place in place order (as the hierarchical communicator does),
//     and each pserver gets the blocks of them it holds.
//   Broadcast(params): each pserver's blocks are received into every local
//     place's tensors.
// A pserver (one place):
//   Reduce(grads): its blocks are received from each trainer in rank order
//     and summed, ((t0 + t1) + t2) + ..., so that with the trainers' in-node
//     sums it adds what collective mode adds.
//   Broadcast(params): its blocks of the parameters go to each trainer.
// Sparse rows (ReduceRows, BroadcastRows): a trainer sends each pserver the
// rows of its places' gradients (in place order) that fall in its block, as
// ids (relative to the block) and values; the pserver makes one
// SelectedRows of every trainer's rows in rank order, and later sends back
// the rows they touched (ascending, once each) of its updated block, which
// the trainers write into their copies. So a step moves what the batch
// touched, not the table.
// Prefetch (a table that the trainers read by lookups only, placed_
// exchanges.h): before the lookups a trainer sends each pserver the ids of
// its block the places read (ascending, once each) and receives those rows;
// its places' table variables are SelectedRows of them, so the table never
// exists on a trainer (and no rows of it come back after the update). The
// pserver answers the trainers in rank order at the start of its step, on a
// channel of its own (Communicator::kChannels), so async mode's deferred
// parameters never meet a prefetch in a pair's order; a prefetch reads the
// pservers' table after the previous step's update in either mode.
// Async mode (max_staleness K >= 1): a trainer's receive of step s takes
// the parameters the pservers sent at step s - K (the first K receives
// after a start or a Drain take nothing: the parameters stay), and a
// pserver sends without waiting for the receive (keeping at most K + 1
// steps of sends in flight), so no trainer waits for the round trip. The
// pservers still add every trainer's gradient of a step, so the runs are
// deterministic; a trainer is never more than K steps ahead of the slowest.
// Drain (every node, at the same step: before a checkpoint and at the end)
// completes what is in flight: the trainers then hold the pservers'
// parameters.
// The order of a pair's messages is the graph's (every node builds its part
// of the same placed program, so the orders agree); a message that names
// another variable is refused, naming both nodes. AllReduce and AllGather
// have no meaning here: FailedPrecondition.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"
#include "actors/comm/in_process_communicator.h"

namespace parex {

// Where the rows of one parameter (and its gradient) live: the cluster
// ranks of its pservers in block order; one rank holds it whole.
struct PserverShard {
  std::string param;
  std::vector<int> ranks;
  int64_t rows = 0;  // dim 0 of the parameter, split by RowBlock
  Dims dims;         // the parameter's
};

class PserverCommunicator final : public Communicator {
 public:
  // `cross`: one rank per node (this node's rank is its first_local_rank),
  // named `nodes`; `trainers`: the trainers' ranks in order; `shards`: by
  // parameter name and by gradient name. A pserver has one local place.
  PserverCommunicator(std::vector<Place> local_places,
                      std::shared_ptr<Communicator> cross,
                      std::vector<std::string> nodes, bool pserver,
                      std::vector<int> trainers,
                      std::map<std::string, PserverShard> shards,
                      int max_staleness = 0);

  const char* backend() const override { return "pserver"; }
  int world_size() const override { return local_.world_size(); }
  int local_size() const override { return local_.world_size(); }
  int first_local_rank() const override { return 0; }
  Place place(int rank) const override { return local_.place(rank); }
  bool blocking() const override { return true; }
  void Interrupt(const Status& reason) override { cross_->Interrupt(reason); }
  void Resume() override { cross_->Resume(); }

  Status AllReduce(std::string_view name, TensorGroups groups) override;
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override;
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;
  Status ReduceRows(std::string_view name,
                    const std::vector<Variable*>& places) override;
  Status BroadcastRows(std::string_view name,
                       const std::vector<Variable*>& places) override;
  Status Prefetch(std::string_view name,
                  const std::vector<std::vector<const Tensor*>>& ids,
                  const std::vector<Variable*>& tables) override;

  // Async mode: what is in flight, completed (see above).
  Status Drain();

  // Tensor bytes this node sent and received so far (headers left out).
  int64_t bytes_sent() const { return sent_; }
  int64_t bytes_received() const { return received_; }
  // A trainer: the most rows of a table one prefetch brought (0: none).
  int64_t max_prefetched_rows() const { return max_prefetched_; }

 private:
  StatusOr<const PserverShard*> ShardOf(std::string_view name) const;
  int BlockOfThisNode(const PserverShard& shard) const;
  // A call's variables (its name: theirs joined by '\n'), each with its
  // shard and its local places' tensors.
  struct Part {
    std::string name;
    const PserverShard* shard = nullptr;
    const PlaceTensors* places = nullptr;
  };
  // What one message to or from a node holds: rows [begin, end) of parts.
  struct Piece {
    size_t part;
    int64_t begin, end;
  };
  struct Message {
    std::string name;  // the pieces' variables joined by '\n'
    std::vector<Piece> pieces;
  };
  StatusOr<std::vector<Part>> Parts(std::string_view joined,
                                    TensorGroups groups) const;
  Message MessageFor(int rank, const std::vector<Part>& parts) const;
  std::vector<int> Holders(const std::vector<Part>& parts) const;
  static Tensor Rows(const Tensor& t, const Piece& piece,
                     const PserverShard& shard);
  static Status Pack(const std::vector<Tensor>& pieces, const std::string& what,
                     Tensor* out);
  Status SendGradients(const std::vector<Part>& parts);
  Status RecvGradients(std::string_view name, const std::vector<Part>& parts);
  Status SendParameters(std::string_view name, const std::vector<Part>& parts);
  Status RecvParameters(std::string_view name, TensorGroups groups);
  Status SendRows(std::string_view name, const std::vector<Variable*>& places,
                  const PserverShard& shard);
  Status RecvRows(std::string_view name, Variable* grad,
                  const PserverShard& shard);
  // A message's name and `what` for errors.
  std::string From(int rank) const { return "node '" + nodes_[rank] + "'"; }

  InProcessCommunicator local_;
  std::shared_ptr<Communicator> cross_;
  const std::vector<std::string> nodes_;
  const bool pserver_;
  const std::vector<int> trainers_;
  const std::map<std::string, PserverShard> shards_;

  // Async mode: the parameters' order in a step, and a trainer's receives
  // deferred since the start or the last Drain (then its targets), or a
  // pserver's sends per step still in flight.
  bool Defer(std::string_view name, const TensorGroups* dense,
             const std::vector<Variable*>* rows);
  Status BeginSends(std::string_view name);
  Status Post(std::string_view name, const Tensor& tensor, int to);
  // Prefetch's two sides (pserver_prefetch.cc), on channel kPrefetch.
  static constexpr int kPrefetch = 1;
  Status RequestRows(std::string_view name,
                     const std::vector<std::vector<const Tensor*>>& ids,
                     const std::vector<Variable*>& tables,
                     const PserverShard& shard);
  Status ServeRows(std::string_view name, const Tensor& block,
                   const PserverShard& shard);
  // RequestRows' parts: the ids wanted (wanted_), asked of each block's
  // pserver (first_[b]: where its rows start in wanted_), and the rows
  // received into `out`.
  Status CollectWanted(const std::vector<std::vector<const Tensor*>>& ids,
                       const PserverShard& shard, const std::string& what);
  Status AskBlocks(std::string_view name, const PserverShard& shard,
                   const std::string& what);
  Status ReceiveBlocks(std::string_view name, const PserverShard& shard,
                       const std::string& what, SelectedRows* out);
  Status RecvParameterRows(std::string_view name,
                           const std::vector<Variable*>& places,
                           const PserverShard& shard);
  const int max_staleness_;
  std::vector<std::string> order_;
  std::map<std::string, int64_t> deferred_;
  std::map<std::string, std::vector<PlaceTensors>> dense_targets_;
  std::map<std::string, std::vector<Variable*>> row_targets_;
  std::deque<size_t> posted_per_step_;
  size_t posted_ = 0;  // sends in flight, over posted_per_step_

  Tensor packed_;   // a message of several blocks
  Tensor scratch_;  // a received block of rows
  Tensor ids_;      // received row ids
  // A pserver: the rows of each parameter the trainers' gradients touched
  // this step (ascending, relative to its block).
  std::map<std::string, std::vector<int64_t>> touched_;
  std::atomic<int64_t> sent_{0}, received_{0}, max_prefetched_{0};
  // A prefetch's ids, ascending, and where each block's begin among them.
  std::vector<int64_t> wanted_;
  std::vector<size_t> first_;
};

}  // namespace parex
