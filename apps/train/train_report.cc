// TrainSession's end-of-run report (apps/train/train_session.h): the step
// account, a pserver node's traffic, and the trace and its summary.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "actors/trace/trace_summary.h"
#include "apps/train/train_session.h"
#include "base/file_io.h"

namespace parex::train {

Cluster::CollectiveTime TrainSession::CollectiveTimeNow() const {
  if (cluster_ == nullptr) return Cluster::CollectiveTime{};
  return cluster_->cluster()->collective_time();
}

StatusOr<std::string> TrainSession::StepAccount() {
  const int64_t steps = step_ - first_step_;
  const Cluster::CollectiveTime now = CollectiveTimeNow();
  const double collective = now.step_s - collective_at_start_.step_s;
  const double own = now.own_s - collective_at_start_.own_s;
  double waiting = 0;
  if (cluster_ != nullptr) {
    // Every node's time in the steps' collectives: the least of them is
    // what the collectives themselves took; the rest of this node's was
    // waiting for slower peers.
    Cluster& cluster = *cluster_->cluster();
    std::vector<double> each(cluster.size(), 0);
    each[cluster.rank()] = collective;
    PAREX_RETURN_IF_ERROR(cluster.SumAcrossNodes(&each, "step account"));
    waiting = collective - *std::min_element(each.begin(), each.end());
  }
  if (steps <= 0) return std::string();
  const double ms = 1e3 / static_cast<double>(steps);
  char line[400];
  std::snprintf(
      line, sizeof(line),
      "step account    %.3f ms a step over %lld steps: compute %.3f ms, "
      "gradient collectives %.3f ms (waiting for peers %.3f ms), other "
      "collectives %.3f ms, feeding %.3f ms\n",
      (step_s_ + own + feed_s_) * ms, static_cast<long long>(steps),
      (step_s_ - collective) * ms, collective * ms, waiting * ms, own * ms,
      feed_s_ * ms);
  return std::string(line);
}

void TrainSession::PrintPserverTraffic() const {
  const auto* ps =
      dynamic_cast<const PserverCommunicator*>(plan_.exec.communicator.get());
  if (ps == nullptr || step_ == 0) return;
  std::printf(
      "pserver traffic sent %.3f MB, received %.3f MB: %.1f KB a step\n",
      ps->bytes_sent() / 1e6, ps->bytes_received() / 1e6,
      (ps->bytes_sent() + ps->bytes_received()) / 1e3 / step_);
  if (ps->max_prefetched_rows() > 0) {
    std::printf("prefetched      at most %lld rows of a table a step\n",
                static_cast<long long>(ps->max_prefetched_rows()));
  }
}

Status TrainSession::WriteTrace() {
  if (plan_.trace.empty()) return Status::Ok();
  std::map<std::string, std::string> metadata;
  if (cluster_ != nullptr) metadata = cluster_->TraceMetadata();
  return WriteFileBytes(plan_.trace, pe_->TraceJson(metadata))
      .WithContext("--trace");
}

void TrainSession::PrintTraceSummary() const {
  if (plan_.trace.empty()) return;
  std::vector<bool> collective, backward, broadcast;
  for (const SsaOp& op : pe_->graph().ops()) {
    collective.push_back(IsCollective(op.kind));
    broadcast.push_back(op.kind == SsaOpKind::kBroadcast);
    backward.push_back(op.kind == SsaOpKind::kComputation &&
                       op.type.size() > 5 &&
                       op.type.compare(op.type.size() - 5, 5, "_grad") == 0);
  }
  std::printf("trace           %s\n", plan_.trace.c_str());
  std::printf("trace summary   %s\n",
              SummarizeTrace(trace_.Spans(), collective, pe_->num_threads(),
                             &backward, &broadcast)
                  .ToString()
                  .c_str());
}

}  // namespace parex::train
