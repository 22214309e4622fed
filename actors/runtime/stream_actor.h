// StreamActor: one stream of one asynchronous place (DESIGN.md §3.4): the
// place's compute, communication or fetch stream, as a CUDA stream is.
//
// Op actors (and collective actors) issue a node's work to the stream actor
// of its (place, stream) with a StreamWork message and go on at once: work on
// one stream runs in the order it was issued, like kernels launched on one
// stream. A consumer on another stream must not start before its producer's
// work completed; the stream waits first, by one of two strategies chosen per
// executor at run time (seed 000, "Synchronize GPU kernels"):
//   - kEvent: the producer's event (cudaStreamWaitEvent): only that work;
//   - kWait: a full Wait of the producer's stream: everything issued on it
//     before the consumer was issued (DeviceContext::Wait).
// Then it checks that each cross-stream input is ordered before the work by
// the waits (vector clocks: a stream's clock joins the clocks of the
// producers it waited for, so an input ordered only transitively, through
// another wait, counts too): a missing wait is reported as a race naming both
// nodes and streams whether or not the producer happened to finish in time,
// never a silent wrong result. It runs the work (after the simulated device's
// delay, if any), completes the node's event and counts the node finished.
//
// Stream actors are detached: waiting for an event blocks their own thread,
// never a scheduler worker. Here they drive the simulated asynchronous place
// (`sim:N`: CPU memory, work that completes later than it was issued), or a
// device stream (StreamSlot::device: a CUDA stream): there the work is
// queued, waits are cudaStreamWaitEvent (kEvent) or a host synchronisation
// of the producer's stream (kWait), and each node's event is recorded after
// its work.
#pragma once

#include <caf/event_based_actor.hpp>
#include <cstdint>

#include "actors/runtime/messages.h"
#include "actors/runtime/runner_state.h"

namespace parex {

class StreamActor : public caf::event_based_actor {
 public:
  StreamActor(caf::actor_config& config, RunnerState* state, int stream);

  caf::behavior make_behavior() override;

 private:
  void Work(int node, int64_t epoch_id, uint64_t flow);
  // Orders node `node` after its cross-stream input k: on a device stream
  // the wait is queued on the device; on the simulated place it blocks until
  // the input may be read (or the step failed). An error of the device.
  Status WaitForInput(int node, size_t k, int64_t epoch_id);
  // Joins the producer's clock into this stream's. REQUIRES: event_mu held.
  void JoinClock(int producer);

  RunnerState* state_;
  int stream_;
  std::vector<int64_t> clock_;  // this stream's vector clock
};

}  // namespace parex
