// Where a traced run's time went (DESIGN.md §5): the summary `parex train
// --trace` and `parex infer --trace` print after the run.
#pragma once

#include <string>
#include <vector>

#include "actors/runtime/trace_recorder.h"

namespace parex {

struct TraceSummary {
  int64_t steps = 0;
  double wall_ms = 0;        // sum over steps of (last end - first begin)
  double compute_ms = 0;     // compute and fetch spans (task time)
  double collective_ms = 0;  // communication-stream spans (task time)
  // Of those, the parameters' broadcasts (Reduce mode's owners send the
  // updated parameters); the rest are the gradients' collectives.
  double broadcast_ms = 0;
  // Share of collective time during which some other span computed: the
  // communication hidden behind compute. 0 when there is no collective.
  double collective_hidden = 0;
  // Share of collective time during which a backward op (a `*_grad` op)
  // computed: the overlap of gradient all-reduce with backward that
  // data-parallel training counts on. 0 when not asked for.
  double collective_hidden_backward = 0;
  bool has_backward = false;
  // Share of (wall x workers) in which no span ran on a worker: waiting for
  // messages, waking up, or nothing ready.
  double scheduler_idle = 0;

  // Lines for a terminal, e.g. "compute 12.3 ms, collectives 1.2 ms (64%
  // hidden behind compute), scheduler idle 8%".
  std::string ToString() const;
};

// Summarises `spans`; `collective[node]` tells the nodes on a
// communication stream from the rest; `workers` is the worker count;
// `backward[node]` (optional) tells the backward ops, `broadcast[node]`
// (optional) the collectives that broadcast parameters.
TraceSummary SummarizeTrace(const std::vector<TraceSpan>& spans,
                            const std::vector<bool>& collective, int workers,
                            const std::vector<bool>* backward = nullptr,
                            const std::vector<bool>* broadcast = nullptr);

}  // namespace parex
