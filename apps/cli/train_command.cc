// parex train: trains an example model with the ParallelExecutor.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "actors/parallel_executor.h"
#include "actors/trace_summary.h"
#include "apps/cli/cli.h"
#include "apps/datasets.h"
#include "apps/models.h"
#include "apps/reader.h"
#include "base/file_io.h"
#include "base/logging.h"

namespace parex::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

struct Defaults {
  int epochs;
  int64_t batch;
};

Defaults DefaultsOf(ExampleKind kind) {
  switch (kind) {
    case ExampleKind::kFitALine:
      return {100, 20};
    case ExampleKind::kDigitsMlp:
      return {20, 32};
    case ExampleKind::kFashionMlp:
      return {5, 64};
    case ExampleKind::kFashionCnn:
      return {1, 64};
  }
  return {1, 32};
}

std::string Duration(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  } else {
    std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(seconds) / 60,
                  static_cast<int>(seconds) % 60);
  }
  return buf;
}

// Mean of a fetched per-place value (one element per place).
double Mean(const Tensor& t) {
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += t.dtype() == DType::kFP64 ? t.data<double>()[i] : t.data<float>()[i];
  }
  return t.numel() > 0 ? sum / t.numel() : 0;
}

}  // namespace

int RunTrain(const TrainOptions& o) {
  const std::string cmd = "train";
  const auto wall_start = Clock::now();
  StatusOr<ExampleKind> kind = ParseExampleKind(o.model);
  if (!kind.ok()) return Fail(cmd, kind.status(), kExitUsage);
  StatusOr<Parallelism> parallel = ParseParallelism(o.places, o.mode);
  if (!parallel.ok()) return Fail(cmd, parallel.status(), kExitUsage);
  const std::vector<Place>* places = &parallel->places;
  const BuildStrategy& build = parallel->build;
  const Defaults defaults = DefaultsOf(*kind);
  if (o.epochs && *o.epochs < 1) {
    return Fail(cmd, InvalidArgument("--epochs must be at least 1, not " +
                                     std::to_string(*o.epochs)), kExitUsage);
  }
  if (o.batch && *o.batch < 1) {
    return Fail(cmd, InvalidArgument("--batch must be at least 1, not " +
                                     std::to_string(*o.batch)), kExitUsage);
  }
  if (o.lr && !(std::isfinite(*o.lr) && *o.lr > 0)) {
    return Fail(cmd, InvalidArgument("--lr must be a finite number above 0, not " +
                                     std::to_string(*o.lr)), kExitUsage);
  }
  if (o.trace_steps < 1) {
    return Fail(cmd, InvalidArgument("--trace-steps must be at least 1, not " +
                                     std::to_string(o.trace_steps)), kExitUsage);
  }
  const int epochs = o.epochs.value_or(defaults.epochs);
  const int64_t batch = o.batch.value_or(defaults.batch);
  const int n = static_cast<int>(places->size());
  if (batch < n) {
    return Fail(cmd, InvalidArgument("--batch " + std::to_string(batch) +
                                     " is smaller than the " + std::to_string(n) +
                                     " places it is split over"), kExitUsage);
  }
  // Outputs are checked before any work: an unwritable --save or --trace is
  // found now, not after training.
  const std::string save = o.save.empty() ? "parex-" + o.model : o.save;
  if (Status s = CheckOutputDir(save, "--save"); !s.ok()) return Fail(cmd, s);
  if (!o.trace.empty()) {
    if (Status s = CheckOutputFile(o.trace, "--trace"); !s.ok()) return Fail(cmd, s);
  }

  ExampleOptions options;
  options.random_seed = o.seed;
  options.learning_rate = o.lr.value_or(0);  // 0: the example's own
  StatusOr<ExampleProgram> model = BuildExample(*kind, options);
  if (!model.ok()) return Fail(cmd, model.status());
  const auto load_start = Clock::now();
  StatusOr<ExampleData> data = LoadExampleData(*kind, o.data_dir, o.fashion_dir);
  if (!data.ok()) return Fail(cmd, data.status());
  LogInfo(Subsystem::kApp, "loaded " + std::to_string(data->train_x.dim(0)) +
                               " train and " + std::to_string(data->test_x.dim(0)) +
                               " test rows in " + std::to_string(Seconds(load_start)) + " s");
  StatusOr<BatchReader> reader = BatchReader::Create(
      {{model->input, data->train_x}, {model->label, data->train_y}},
      {batch, /*shuffle=*/true, static_cast<uint64_t>(o.seed),
       /*drop_last=*/false});
  if (!reader.ok()) return Fail(cmd, reader.status());
  if (reader->num_rows() < batch) {
    return Fail(cmd, InvalidArgument("--batch " + std::to_string(batch) +
                                     " is larger than the " +
                                     std::to_string(reader->num_rows()) +
                                     " training rows"), kExitUsage);
  }

  Scope scope;
  Trainer trainer(&*model, &scope);
  if (Status s = trainer.RunStartup(); !s.ok()) return Fail(cmd, s);
  TraceRecorder trace(/*enabled=*/!o.trace.empty());
  ExecutionStrategy exec;
  exec.trace = o.trace.empty() ? nullptr : &trace;
  StatusOr<std::unique_ptr<ParallelExecutor>> pe = ParallelExecutor::Create(
      *places, model->main, model->loss, &scope, build, exec);
  if (!pe.ok()) return Fail(cmd, pe.status());

  std::printf("parex train: %s on %d %s place%s (%s), %lld train rows, "
              "%d epoch%s of %lld batches of %lld, seed %d\n",
              ExampleName(*kind), n, (*places)[0].is_sim() ? "simulated" : "CPU",
              n == 1 ? "" : "s", o.mode.c_str(),
              static_cast<long long>(reader->num_rows()), epochs,
              epochs == 1 ? "" : "s",
              static_cast<long long>(reader->num_batches()),
              static_cast<long long>(batch), o.seed);
  std::fflush(stdout);
  const bool live = o.progress && isatty(STDOUT_FILENO);
  std::vector<std::string> fetch = {model->loss};
  if (model->is_classifier()) fetch.push_back(model->accuracy);
  const int64_t total_steps = epochs * reader->num_batches();
  int64_t step = 0, samples = 0;
  const auto train_start = Clock::now();
  auto last_draw = train_start - std::chrono::seconds(1);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double loss_sum = 0, acc_sum = 0;
    int64_t steps = 0;
    const auto epoch_start = Clock::now();
    BatchReader::Iterator batches = reader->Begin(epoch);
    FeedMap feed;
    for (int64_t b = 0; batches.Next(&feed); ++b) {
      const int64_t rows = feed.at(model->input).dim(0);
      if (rows < n) continue;  // a last batch too small to split
      if (!o.trace.empty() && step == o.trace_steps) trace.set_enabled(false);
      StatusOr<std::vector<Tensor>> out = (*pe)->Run(feed, fetch);
      if (!out.ok()) {
        if (live) std::printf("\n");
        return Fail(cmd, out.status().WithContext("epoch " + std::to_string(epoch) +
                                                  ", step " + std::to_string(b)));
      }
      const double loss = Mean((*out)[0]);
      if (!std::isfinite(loss)) {
        if (live) std::printf("\n");
        return Fail(cmd, Internal("the loss is " + std::to_string(loss) +
                                  " at epoch " + std::to_string(epoch) +
                                  ", step " + std::to_string(b) +
                                  ": training diverged (try a smaller --lr)"));
      }
      loss_sum += loss;
      if (model->is_classifier()) acc_sum += Mean((*out)[1]);
      ++steps;
      ++step;
      samples += rows;
      if (live && Seconds(last_draw) > 0.1) {
        last_draw = Clock::now();
        const double elapsed = Seconds(train_start);
        const double eta = elapsed / step * (total_steps - step);
        std::printf("\r\033[Kepoch %d/%d  step %lld/%lld  loss %.4f  %.0f samples/s  ETA %s",
                    epoch + 1, epochs, static_cast<long long>(b + 1),
                    static_cast<long long>(reader->num_batches()), loss_sum / steps,
                    samples / elapsed, Duration(eta).c_str());
        std::fflush(stdout);
      }
    }
    const double secs = Seconds(epoch_start);
    if (live) std::printf("\r\033[K");
    if (model->is_classifier()) {
      std::printf("epoch %d/%d: loss %.4f, train accuracy %.4f, %lld steps, %.1f s\n",
                  epoch + 1, epochs, loss_sum / std::max<int64_t>(steps, 1),
                  acc_sum / std::max<int64_t>(steps, 1),
                  static_cast<long long>(steps), secs);
    } else {
      std::printf("epoch %d/%d: loss %.4f, %lld steps, %.1f s\n", epoch + 1,
                  epochs, loss_sum / std::max<int64_t>(steps, 1),
                  static_cast<long long>(steps), secs);
    }
    std::fflush(stdout);
  }
  const double train_seconds = Seconds(train_start);

  StatusOr<Evaluation> eval = trainer.Evaluate(data->test_x, data->test_y);
  if (!eval.ok()) return Fail(cmd, eval.status());
  if (Status s = trainer.SaveInferenceModel(save); !s.ok()) return Fail(cmd, s);
  if (!o.trace.empty()) {
    if (Status s = WriteFileBytes(o.trace, (*pe)->TraceJson()); !s.ok()) {
      return Fail(cmd, s.WithContext("--trace"));
    }
  }

  std::printf("\n");
  if (model->is_classifier()) {
    std::printf("test accuracy   %.4f on %lld rows\n", eval->accuracy,
                static_cast<long long>(eval->rows));
  } else {
    std::printf("test MSE        %.4f on %lld rows\n", eval->mse,
                static_cast<long long>(eval->rows));
  }
  std::printf("wall time       %.1f s (training %.1f s)\n", Seconds(wall_start),
              train_seconds);
  std::printf("throughput      %.0f samples/s over %lld steps\n",
              samples / std::max(train_seconds, 1e-9), static_cast<long long>(step));
  std::printf("model saved to  %s (inference model: %s -> %s)\n", save.c_str(),
              model->input.c_str(), model->prediction.c_str());
  if (!o.trace.empty()) {
    std::vector<bool> collective;
    for (const SsaOp& op : (*pe)->graph().ops()) collective.push_back(IsCollective(op.kind));
    std::printf("trace           %s\n", o.trace.c_str());
    std::printf("trace summary   %s\n",
                SummarizeTrace(trace.Spans(), collective, (*pe)->num_threads())
                    .ToString()
                    .c_str());
  }
  return kExitOk;
}

}  // namespace parex::cli
