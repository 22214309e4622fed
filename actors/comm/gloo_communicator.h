// GlooCommunicator: the collectives across processes, one rank per process
// (a node of the cluster), over Gloo's TCP transport (DESIGN.md §4).
//
// Each call passes this rank's tensor of each group (local_size() == 1) and
// blocks until every rank made the matching call, so its collective actor is
// detached (blocking() is true). Each all-reduce or reduce (by name) gets, at
// its first call, a Gloo context of its own (a rendezvous through the store
// under a prefix counted in call order, so every rank makes the same), a
// staging tensor of its size, and Gloo's AllreduceRingChunked built over that
// memory (its constructor registers the buffers; run() only moves data),
// followed by a barrier, so nobody sends to buffers a peer has not
// registered yet. Broadcasts (one-off: the initial and final parameters) use
// Gloo's unbound-buffer broadcast on the context made at Connect. Ranks must
// make their calls in one order (the collective actor's fixed order).
//
// Why a context per collective: with two of these algorithms on one context,
// this Gloo (Debian's 2022 snapshot) stalled both ranks for good in waitRecv
// after a few hundred runs (1024 then 4096 floats); with a context each it
// never did. Gloo's unbound-buffer collectives (gloo::allreduce) do not
// stall, but pay a handshake per segment: 2-3 ms per call on 127.0.0.1
// where the chunked ring takes 0.2-0.3 ms.
//
// Memory: the tensors are copied in end to end (a fused bucket is several)
// and, for an all-reduce, each is then left viewing its range of the
// staging memory (dims and LoD kept), so next step's gradients, written in
// place by their ops, need no copy at all. A reduce copies out on its root.
//
// Sums: Gloo's chunked ring: each chunk is summed once along the ring and
// the finished chunk is copied to the other ranks, so every rank ends with
// the same bits, and the same inputs give the same bits run to run. (Gloo's
// plain AllreduceRing sums in a different order on each rank: with 3 ranks
// the ranks' parameters drifted apart.) Errors (a peer gone, a timeout: the
// contexts' timeout is the topology's collective_timeout_ms) are Status
// values naming the collective, the variable and the rank; after one, every
// later call fails with the same error. The cluster can add what it knows
// to such an error (SetExplainer: which node was lost, or a stall report of
// who had not joined the collective). Interrupt fails the calls that come
// after it; a call already waiting inside Gloo cannot be woken (the TCP
// pair's cancel is protected, and Debian's Gloo does not ship its header),
// so a node whose peer is lost exits rather than wait for it
// (ClusterSession::FailAndExit in apps/train/cluster_session.cc, as
// PyTorch's NCCL watchdog ends its process).
//
// Progress: every call is numbered (the same numbers on every rank, as the
// calls are made in one order); an observer hears each call begin and end,
// which is what a stall report compares across nodes.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"

namespace gloo {
class Context;
namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport
namespace rendezvous {
class Store;
}  // namespace rendezvous
}  // namespace gloo

namespace parex {

// Whether Gloo's error message `what` says it timed out.
bool IsGlooTimeout(const std::string& what);

// A peer that vanishes must make this node's writes fail (EPIPE, then a
// named error), not end the process by SIGPIPE: Gloo writes with writev()
// and CAF's TLS transport through OpenSSL's write(), neither of which can
// ask for MSG_NOSIGNAL. Sets SIGPIPE to ignored when its disposition is
// still the default (a program's own handler is left alone); Connect and
// Cluster::Join call it.
void IgnoreSigpipeUnlessHandled();

class GlooCommunicator final : public Communicator {
 public:
  // All-reduces and reduces of at most this many bytes go to every rank
  // at once and are summed in rank order (AllReduceDirect); larger ones
  // run Gloo's chunked ring. Two ranks move the same bytes either way, so
  // there the direct path (one message time, not the ring's two) takes
  // up to kDirectMaxBytesTwoRanks.
  static constexpr size_t kDirectMaxBytes = 64 << 10;
  static constexpr size_t kDirectMaxBytesTwoRanks = 192 << 10;
  size_t direct_max_bytes() const {
    return size_ == 2 ? kDirectMaxBytesTwoRanks : kDirectMaxBytes;
  }
  // Joins `size` ranks through `store` (every rank calls it with the same
  // store contents and its own rank), listening on `host` (an address of
  // this machine; Gloo picks the port). `rank_names` name the ranks in
  // messages (node names). Errors: the rendezvous or a connection failed or
  // timed out.
  static StatusOr<std::shared_ptr<GlooCommunicator>> Connect(
      std::shared_ptr<gloo::rendezvous::Store> store, int rank, int size,
      const std::string& host, std::chrono::milliseconds timeout,
      std::vector<std::string> rank_names);
  ~GlooCommunicator() override;

  const char* backend() const override { return "gloo"; }
  int world_size() const override { return size_; }
  int local_size() const override { return 1; }
  int first_local_rank() const override { return rank_; }
  Place place(int rank) const override { return Place::CPU(rank); }
  bool blocking() const override { return true; }
  void Interrupt(const Status& reason) override;
  void Resume() override;

  Status AllReduce(std::string_view name, TensorGroups groups) override;
  // Rank `root` gets the sum (computed as an all-reduce; the others' tensors
  // are left as they were).
  Status Reduce(std::string_view name, TensorGroups groups, int root) override;
  Status Broadcast(std::string_view name, TensorGroups groups,
                   int root) override;
  // Not across processes yet (parex's gradients are dense: the executor
  // all-reduces them); Unimplemented.
  Status AllGather(std::string_view name, const PlaceTensors& inputs,
                   const PlaceTensors& outputs) override;

  // Point to point on the context made at Connect, over Gloo's unbound
  // buffers: a fixed-size header (dtype, dims, the variable's name) and then
  // the bytes. A header that is not one, names another variable, or gives a
  // bad dtype, rank or size is refused naming the peer; nothing is
  // allocated before it is checked. Interrupt wakes a call waiting here.
  Status Send(std::string_view name, const Tensor& tensor, int to,
              int channel = 0) override;
  Status Recv(std::string_view name, Tensor* tensor, int from,
              int channel = 0) override;
  // The header and a copy of the bytes, posted; each pending send keeps
  // its buffers until FlushSends waits for it (oldest first).
  Status SendAsync(std::string_view name, const Tensor& tensor, int to,
                   int channel = 0) override;
  Status FlushSends(size_t keep = 0) override;

  // The rank names given at Connect ("node 'b'" in messages).
  const std::string& rank_name(int rank) const { return rank_names_[rank]; }

  // What a failed call was: its number, kind and name, and whether Gloo
  // timed out (rather than a connection failing).
  struct Failure {
    int64_t seq = 0;
    Collective collective = Collective::kAllReduce;
    std::string name;
    bool timed_out = false;
  };
  // Called (on the calling thread) when a call fails, before the error is
  // returned; its text is appended to the error. Set before the first call.
  void SetExplainer(std::function<std::string(const Failure&)> explain) {
    explain_ = std::move(explain);
  }
  // Hears every call begin (entering) and end: its number, kind and name.
  // Set before the first call; called on the calling thread.
  using Observer = CollectiveObserver;
  void SetObserver(Observer observer) { observer_ = std::move(observer); }

 private:
  GlooCommunicator() = default;
  struct Entry;
  // The entry of `name` (an all-reduce or a reduce, which runs as one),
  // made (context, staging memory and algorithm) the first time, or again
  // when the dtype, size or place changed (every rank sees the same change
  // at the same call). `collective` names it in errors.
  StatusOr<Entry*> EntryFor(Collective collective, std::string_view name,
                            DType dtype, int64_t count, Place place);
  // A broadcast: Gloo's unbound-buffer broadcast on the context made at
  // Connect (broadcasts are one-off, at the start and end of training: a
  // context each would cost a rendezvous and sockets per persistable).
  Status BroadcastOnce(std::string_view name, TensorGroups groups, int root,
                       DType dtype, int64_t count);
  // A small all-reduce or reduce (at most direct_max_bytes()): every rank
  // sends its tensors, end to end, to every other rank at once on the
  // context made at Connect (unbound buffers), and each sums the ranks'
  // values in rank order, ((r0 + r1) + r2) + ..., so every rank gets the
  // same bits. One message time instead of the ring's 2 (N - 1) steps,
  // for (N - 1) x the bytes: where training's small buckets and the
  // scalars the nodes agree on are latency-bound (gloo_communicator_
  // direct.cc).
  Status AllReduceDirect(Collective collective, std::string_view name,
                         TensorGroups groups, int root, DType dtype,
                         int64_t count);
  // Posts this rank's first `bytes` of direct_mine_ to every other rank and
  // receives theirs into direct_peers_ (each at rank * direct_max_bytes()).
  Status ExchangeDirect(Collective collective, std::string_view name,
                        size_t bytes);
  // Made at the first call, over direct_max_bytes() of this rank's values
  // and as much per rank (Gloo registers them once; each call posts its
  // byte count).
  std::vector<char> direct_mine_, direct_peers_;
  std::unique_ptr<gloo::transport::UnboundBuffer> direct_send_, direct_recv_;
  // Numbers the call, tells the observer, marks it in Gloo (for Interrupt).
  Status Run(Collective collective, std::string_view name, TensorGroups groups,
             int root);
  Status RunCall(Collective collective, std::string_view name,
                 TensorGroups groups, int root);
  Status Failed(Collective collective, std::string_view name,
                const std::string& what);
  // One unbound-buffer transfer of `bytes` at `data` with `peer` (waited
  // for, interruptible); `what` names it in errors.
  Status Transfer(bool send, void* data, size_t bytes, int peer, uint64_t slot,
                  const std::string& what);
  Status CheckPeer(int peer, int channel, const std::string& what) const;

  // Made at Connect: broadcasts run on it; and a rank that cannot reach
  // another fails at join time, not at the first step.
  std::shared_ptr<gloo::Context> context_;
  Tensor broadcast_staging_;    // a fused broadcast's groups, end to end
  uint32_t broadcast_tag_ = 1;  // the same sequence on every rank
  int rank_ = 0;
  int size_ = 1;
  std::vector<std::string> rank_names_;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> entries_;
  // Entries replaced by a rebuild, kept until destruction.
  std::vector<std::unique_ptr<Entry>> retired_;
  std::shared_ptr<gloo::rendezvous::Store>
      store_;  // the rendezvous of new contexts
  std::shared_ptr<gloo::transport::Device> device_;
  std::chrono::milliseconds timeout_{60000};
  int contexts_made_ = 0;
  std::function<std::string(const Failure&)> explain_;
  Observer observer_;
  int64_t seq_ = 0;        // calls made (the calling thread's)
  mutable std::mutex mu_;  // guards broken_, interrupted_ and waiting_
  Status broken_;       // set by the first Gloo failure: the context is closed
  Status interrupted_;  // set by Interrupt until Resume
  // Point to point: messages sent to and received from each rank so far on
  // each channel (the tags of the next; index channel * size + rank), and
  // the buffer a call waits on (mu_).
  std::vector<uint32_t> sent_, received_;
  gloo::transport::UnboundBuffer* waiting_ = nullptr;
  // A posted send: a header's bytes and the tensor (SendAsync's: a copy),
  // kept until the sends end; SendAsync's wait here, oldest first (the
  // calling thread's).
  struct PendingSend {
    std::vector<char> header;
    Tensor bytes;
    std::unique_ptr<gloo::transport::UnboundBuffer> header_buffer, bytes_buffer;
    std::string what;
  };
  std::deque<std::unique_ptr<PendingSend>> pending_;
  // Checks `tensor` and posts its header and bytes to `to` into `p` (the
  // bytes are `tensor`'s own unless `copy`); WaitSent waits for both.
  Status PostSend(std::string_view name, const Tensor& tensor, int to,
                  int channel, bool copy, PendingSend* p);
  Status WaitSent(PendingSend* p);
  // Waits for a posted send or receive (within the collective timeout;
  // Interrupt wakes it); a failure breaks the context.
  Status WaitPosted(gloo::transport::UnboundBuffer* buffer, bool send,
                    const std::string& what);
  // A point-to-point call's failure `s` with what the explainer knows, as
  // a collective's (Failed): a send to a killed pserver fails in Gloo at
  // about the moment the cluster learns which node is gone, and the error
  // should name it (the explainer waits a moment for that), not only the
  // peer's address.
  Status Explained(Status s);
};

}  // namespace parex
