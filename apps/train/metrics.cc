#include "apps/train/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/train/stop_signal.h"
#include "base/digest.h"
#include "base/file_io.h"

namespace parex::train {

MetricsWindow::MetricsWindow(std::vector<std::string> fetches, bool classifier,
                             int world, bool lines)
    : fetches_(std::move(fetches)),
      classifier_(classifier),
      world_(world),
      keep_lines_(lines),
      fetch_sums_(fetches_.size()) {}

Status MetricsWindow::SumAcrossNodes(Cluster* cluster, int* stop) {
  std::vector<double> sums;
  const size_t width = 2 + fetches_.size();
  for (const StepMetrics& m : pending_) {
    sums.push_back(m.loss);
    sums.push_back(m.accuracy);
    sums.insert(sums.end(), m.fetched.begin(), m.fetched.end());
  }
  // Each node's time in the steps' collectives, in its own slots: the
  // least of them is what the collectives took, the rest was waiting.
  const size_t times = sums.size();
  const size_t steps = pending_.size();
  sums.resize(times + steps * cluster->size(), 0.0);
  for (size_t i = 0; i < steps; ++i) {
    sums[times + cluster->rank() * steps + i] = pending_[i].collective_ms;
  }
  // A node told to stop tells the others here, at a step all reach.
  sums.push_back(StopSignals::Received() != 0 ? 1 : 0);
  PAREX_RETURN_IF_ERROR(
      cluster->SumAcrossNodes(&sums, "step metrics")
          .WithContext("epoch " + std::to_string(pending_[0].epoch) +
                       ", steps " + std::to_string(pending_[0].batch) + "-" +
                       std::to_string(pending_.back().batch)));
  for (size_t i = 0; i < pending_.size(); ++i) {
    pending_[i].loss = sums[width * i] / world_;
    pending_[i].accuracy = sums[width * i + 1] / world_;
    for (size_t f = 0; f < fetches_.size(); ++f) {
      pending_[i].fetched[f] = sums[width * i + 2 + f] / world_;
    }
    double least = pending_[i].collective_ms;
    for (int node = 0; node < cluster->size(); ++node) {
      least = std::min(least, sums[times + node * steps + i]);
    }
    pending_[i].waiting_ms = pending_[i].collective_ms - least;
  }
  if (sums.back() > 0) {
    *stop = StopSignals::Received() != 0 ? StopSignals::Received() : SIGTERM;
  }
  return Status::Ok();
}

StatusOr<int> MetricsWindow::Settle(Cluster* cluster) {
  int stop = 0;
  if (pending_.empty()) return stop;
  if (cluster == nullptr && StopSignals::Received() != 0) {
    stop = StopSignals::Received();
  }
  if (cluster != nullptr) PAREX_RETURN_IF_ERROR(SumAcrossNodes(cluster, &stop));
  for (const StepMetrics& m : pending_) {
    if (!std::isfinite(m.loss)) {
      pending_.clear();
      diverged_ = true;
      return Internal("the loss is " + std::to_string(m.loss) + " at epoch " +
                      std::to_string(m.epoch) + ", step " +
                      std::to_string(m.batch) +
                      ": training diverged (try a smaller --lr)");
    }
    loss_sum_ += m.loss;
    acc_sum_ += m.accuracy;
    for (size_t f = 0; f < m.fetched.size(); ++f)
      fetch_sums_[f] += m.fetched[f];
    ++steps_;
    if (keep_lines_) AddLine(m);
  }
  pending_.clear();
  return stop;
}

void MetricsWindow::AddLine(const StepMetrics& m) {
  char line[448], accuracy[64] = "";
  if (classifier_)
    std::snprintf(accuracy, sizeof(accuracy), ", \"accuracy\": %.9g",
                  m.accuracy);
  std::string fetched;
  for (size_t f = 0; f < m.fetched.size(); ++f) {
    char value[64];
    std::snprintf(value, sizeof(value), "%.9g", m.fetched[f]);
    fetched += (f == 0 ? ", \"fetches\": {" : ", ") +
               nlohmann::json(fetches_[f]).dump() + ": " + value;
  }
  if (!fetched.empty()) fetched += "}";
  std::snprintf(line, sizeof(line),
                "{\"step\": %lld, \"epoch\": %d, \"loss\": %.9g%s, "
                "\"samples_per_s\": %.1f, \"wall_s\": %.6f, \"step_ms\": "
                "%.3f, \"collective_ms\": %.3f, \"waiting_ms\": %.3f, "
                "\"other_collective_ms\": %.3f, \"feed_ms\": %.3f",
                static_cast<long long>(m.step), m.epoch + 1, m.loss, accuracy,
                m.samples_per_s, m.wall_s, m.step_ms, m.collective_ms,
                m.waiting_ms, m.other_ms, m.feed_ms);
  lines_ += line;
  lines_ += fetched;  // (any length)
  lines_ += "}\n";
}

void MetricsWindow::StartEpoch() {
  loss_sum_ = 0;
  acc_sum_ = 0;
  std::fill(fetch_sums_.begin(), fetch_sums_.end(), 0.0);
  steps_ = 0;
}

double MetricsWindow::mean_loss() const {
  return loss_sum_ / std::max<int64_t>(steps_, 1);
}

void MetricsWindow::PrintEpochLine(int epoch, int epochs,
                                   double seconds) const {
  std::string extra;
  for (size_t f = 0; f < fetch_sums_.size(); ++f) {
    char value[96];
    std::snprintf(value, sizeof(value), ", %s %.4g", fetches_[f].c_str(),
                  fetch_sums_[f] / std::max<int64_t>(steps_, 1));
    extra += value;
  }
  if (classifier_) {
    std::printf(
        "epoch %d/%d: loss %.4f, train accuracy %.4f%s, %lld steps, %.1f s\n",
        epoch + 1, epochs, mean_loss(), acc_sum_ / std::max<int64_t>(steps_, 1),
        extra.c_str(), static_cast<long long>(steps_), seconds);
  } else {
    std::printf("epoch %d/%d: loss %.4f%s, %lld steps, %.1f s\n", epoch + 1,
                epochs, mean_loss(), extra.c_str(),
                static_cast<long long>(steps_), seconds);
  }
}

void MetricsWindow::AddEvalLine(int64_t step, int epoch, double loss,
                                double accuracy, int64_t rows) {
  if (!keep_lines_) return;
  char json[240], acc[64] = "";
  if (classifier_)
    std::snprintf(acc, sizeof(acc), ", \"accuracy\": %.9g", accuracy);
  std::snprintf(json, sizeof(json),
                "{\"eval\": true, \"step\": %lld, \"epoch\": %d, \"loss\": "
                "%.9g%s, \"rows\": %lld}\n",
                static_cast<long long>(step), epoch + 1, loss, acc,
                static_cast<long long>(rows));
  lines_ += json;
}

std::string MetricsLinesUpTo(const std::string& path, int64_t step) {
  std::string kept;
  StatusOr<std::string> before = ReadFileBytes(path);
  if (!before.ok()) return kept;
  size_t begin = 0;
  while (begin < before->size()) {
    const size_t end = before->find('\n', begin);
    if (end == std::string::npos) break;
    const std::string line = before->substr(begin, end - begin + 1);
    long long s = -1;
    if (std::sscanf(line.c_str(), "{\"step\": %lld", &s) == 1 && s <= step)
      kept += line;
    begin = end + 1;
  }
  return kept;
}

double Mean(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += t.dtype() == DType::kFP64 ? t.data<double>()[i] : t.data<float>()[i];
  }
  return t.numel() > 0 ? sum / t.numel() : 0;
}

std::string ParameterDigest(const Scope& scope,
                            std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string bytes;
  for (const std::string& name : names) {
    const Variable* var = scope.FindLocalVar(name);
    if (var == nullptr || !var->IsTensor() || !var->GetTensor()->defined())
      continue;
    const Tensor& t = *var->GetTensor();
    bytes += name + '\0' + DTypeName(t.dtype()) + '\0';
    for (int64_t d : t.dims()) bytes += std::to_string(d) + ',';
    bytes += '\0';
    bytes.append(static_cast<const char*>(t.raw_data()), t.bytes());
  }
  return Sha256Hex(bytes);
}

}  // namespace parex::train
