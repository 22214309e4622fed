// The messages the runtime's actors exchange (DESIGN.md §3.4), declared once.
//
// Each is a small struct with an `inspect` overload and a CAF type id (the
// `parex` type id block below), registered with every actor system parex
// makes (worker_pool.cc), so CAF can serialise them: they can cross a
// process boundary as they are. Node ids are TaskGraph node ids; `step` is
// the step number Run was given; `flow` pairs a send with its receipt in the
// trace (0: not traced).
//
//   coordinator ──StepStart──▶ coordinator        (Run, from the caller)
//   coordinator ──RunNode────▶ op / collective actor   (the roots)
//   op actor    ──RunNode────▶ op / collective actor   (a pending count hit 0)
//   anyone      ──InputReady─▶ op / collective actor   (decrement, fire at 0)
//   op actor    ──StreamWork─▶ stream actor        (asynchronous places)
//   any actor   ──StepError──▶ coordinator         (first error wins)
//   any actor   ──StepDone───▶ coordinator         (the step's last node)
//   caller      ──AbortStep──▶ coordinator ──AbortStep──▶ every actor
#pragma once

#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>
#include <cstdint>
#include <string>

namespace parex {

// Run the chain headed by `node` (or collective `node`) in `step`: its
// pending count reached zero. Inside a process the producer that brings the
// shared count to zero sends it (the local shortcut of InputReady).
struct RunNode {
  int64_t step = 0;
  int32_t node = -1;
  int32_t from = -1;  // the sender's node, -1: the coordinator
  uint64_t flow = 0;
};

// One input of `node` is ready in `step`: the receiver decrements the node's
// pending count and runs it when the count reaches zero. How an input made in
// another process, on another device or stream reaches its consumer.
struct InputReady {
  int64_t step = 0;
  int32_t node = -1;
  int32_t from = -1;
  uint64_t flow = 0;
};

// Enqueue node `node`'s work of `step` on the receiving stream actor.
struct StreamWork {
  int64_t step = 0;
  int32_t node = -1;
  int32_t from = -1;
  uint64_t flow = 0;
};

// Start step `step` (the caller's Run).
struct StepStart {
  int64_t step = 0;
};

// Every node of `step` finished (or was skipped after a failure).
struct StepDone {
  int64_t step = 0;
};

// Node `node` of `step` failed; `code` is a StatusCode.
struct StepError {
  int64_t step = 0;
  int32_t node = -1;
  int32_t code = 0;
  std::string message;
};

// Abandon step `step` (-1: whichever step is running): a peer is gone, a
// deadline passed. `code` is a StatusCode.
struct AbortStep {
  int64_t step = -1;
  int32_t code = 0;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunNode& x) {
  return f(caf::meta::type_name("parex.RunNode"), x.step, x.node, x.from,
           x.flow);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, InputReady& x) {
  return f(caf::meta::type_name("parex.InputReady"), x.step, x.node, x.from,
           x.flow);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StreamWork& x) {
  return f(caf::meta::type_name("parex.StreamWork"), x.step, x.node, x.from,
           x.flow);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepStart& x) {
  return f(caf::meta::type_name("parex.StepStart"), x.step);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepDone& x) {
  return f(caf::meta::type_name("parex.StepDone"), x.step);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StepError& x) {
  return f(caf::meta::type_name("parex.StepError"), x.step, x.node, x.code,
           x.message);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, AbortStep& x) {
  return f(caf::meta::type_name("parex.AbortStep"), x.step, x.code, x.reason);
}

}  // namespace parex

CAF_BEGIN_TYPE_ID_BLOCK(parex, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(parex, (parex::RunNode))
CAF_ADD_TYPE_ID(parex, (parex::InputReady))
CAF_ADD_TYPE_ID(parex, (parex::StreamWork))
CAF_ADD_TYPE_ID(parex, (parex::StepStart))
CAF_ADD_TYPE_ID(parex, (parex::StepDone))
CAF_ADD_TYPE_ID(parex, (parex::StepError))
CAF_ADD_TYPE_ID(parex, (parex::AbortStep))
CAF_END_TYPE_ID_BLOCK(parex)
