#include "actors/trace/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

namespace parex {
namespace {

using Interval = std::pair<int64_t, int64_t>;

// Sorted, disjoint union of `v`.
std::vector<Interval> Union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// Length of [a, b) covered by the disjoint, sorted `cover`.
int64_t Covered(const std::vector<Interval>& cover, int64_t a, int64_t b) {
  int64_t total = 0;
  auto it = std::lower_bound(
      cover.begin(), cover.end(), Interval{a, a},
      [](const Interval& x, const Interval& y) { return x.second < y.first; });
  for (; it != cover.end() && it->first < b; ++it) {
    total +=
        std::max<int64_t>(0, std::min(b, it->second) - std::max(a, it->first));
  }
  return total;
}

// The share of the collectives' time that compute (and backward compute)
// covered.
void HiddenShares(const std::vector<const TraceSpan*>& collectives,
                  std::vector<Interval> compute,
                  std::vector<Interval> backward_compute, TraceSummary* s) {
  const std::vector<Interval> cover = Union(std::move(compute));
  const std::vector<Interval> backward_cover =
      Union(std::move(backward_compute));
  int64_t hidden = 0, hidden_backward = 0, collective = 0;
  for (const TraceSpan* c : collectives) {
    hidden += Covered(cover, c->begin_ns, c->task_end_ns);
    hidden_backward += Covered(backward_cover, c->begin_ns, c->task_end_ns);
    collective += c->task_end_ns - c->begin_ns;
  }
  s->collective_hidden =
      collective > 0 ? static_cast<double>(hidden) / collective : 0;
  s->collective_hidden_backward =
      collective > 0 ? static_cast<double>(hidden_backward) / collective : 0;
}

}  // namespace

TraceSummary SummarizeTrace(const std::vector<TraceSpan>& spans,
                            const std::vector<bool>& collective_node,
                            int workers, const std::vector<bool>* backward,
                            const std::vector<bool>* broadcast) {
  TraceSummary s;
  std::map<int64_t, Interval> window;  // per step
  std::vector<Interval> compute, backward_compute;
  std::vector<const TraceSpan*> collectives;
  int64_t busy = 0;
  for (const TraceSpan& span : spans) {
    if (span.node < 0 ||
        span.node >= static_cast<int>(collective_node.size())) {
      continue;
    }
    auto [it, fresh] =
        window.emplace(span.step, Interval{span.begin_ns, span.end_ns});
    if (!fresh) {
      it->second.first = std::min(it->second.first, span.begin_ns);
      it->second.second = std::max(it->second.second, span.end_ns);
    }
    const int64_t task = span.task_end_ns - span.begin_ns;
    busy += span.end_ns - span.begin_ns;
    if (collective_node[span.node]) {
      s.collective_ms += task / 1e6;
      if (broadcast != nullptr &&
          span.node < static_cast<int>(broadcast->size()) &&
          (*broadcast)[span.node]) {
        s.broadcast_ms += task / 1e6;
      }
      collectives.push_back(&span);
    } else {
      s.compute_ms += task / 1e6;
      compute.emplace_back(span.begin_ns, span.task_end_ns);
      if (backward != nullptr &&
          span.node < static_cast<int>(backward->size()) &&
          (*backward)[span.node]) {
        backward_compute.emplace_back(span.begin_ns, span.task_end_ns);
      }
    }
  }
  s.steps = static_cast<int64_t>(window.size());
  int64_t wall = 0;
  for (const auto& [step, w] : window) wall += w.second - w.first;
  s.wall_ms = wall / 1e6;
  s.has_backward = backward != nullptr;
  HiddenShares(collectives, std::move(compute), std::move(backward_compute),
               &s);
  const double capacity = static_cast<double>(wall) * std::max(workers, 1);
  s.scheduler_idle = capacity > 0 ? std::max(0.0, 1.0 - busy / capacity) : 0;
  return s;
}

std::string TraceSummary::ToString() const {
  char backward[64] = "";
  if (has_backward) {
    std::snprintf(backward, sizeof(backward), ", %.0f%% behind backward",
                  100 * collective_hidden_backward);
  }
  char split[96] = "";
  if (broadcast_ms > 0) {
    std::snprintf(split, sizeof(split),
                  ": gradients %.1f ms, parameters' broadcasts %.1f ms",
                  collective_ms - broadcast_ms, broadcast_ms);
  }
  char buf[400];
  std::snprintf(
      buf, sizeof(buf),
      "%lld traced steps, %.1f ms: compute %.1f ms, collectives "
      "%.1f ms%s (%.0f%% hidden behind compute%s), scheduler idle %.0f%%",
      static_cast<long long>(steps), wall_ms, compute_ms, collective_ms, split,
      100 * collective_hidden, backward, 100 * scheduler_idle);
  return buf;
}

}  // namespace parex
