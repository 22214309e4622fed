#include "apps/models.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>

#include "apps/datasets.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/prune.h"
#include "kernels/io/model_io.h"
#include "proto/program_io.h"

namespace parex {
namespace {

constexpr char kStateFile[] = "trainer_state";

double ScalarValue(const Tensor& t) {
  if (t.dtype() == DType::kFP64) return t.data<double>()[0];
  return t.data<float>()[0];
}

double ElementAt(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kFP64) return t.data<double>()[i];
  return t.data<float>()[i];
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

StatusOr<ExampleData> LoadExampleData(ExampleKind kind,
                                      const std::string& data_dir,
                                      const std::string& fashion_dir) {
  switch (kind) {
    case ExampleKind::kFitALine: {
      PAREX_ASSIGN_OR_RETURN(
          HousingData d, LoadUciHousing(data_dir + "/boston_house_prices.csv"));
      return ExampleData{d.train_x, d.train_y, d.test_x, d.test_y};
    }
    case ExampleKind::kDigitsMlp: {
      PAREX_ASSIGN_OR_RETURN(ClassificationData d,
                             LoadDigits(data_dir + "/digits.csv.gz"));
      PAREX_RETURN_IF_ERROR(AddShiftedCopies(&d.train_x, &d.train_y, 8, 8));
      PAREX_RETURN_IF_ERROR(StandardizeFeatures(&d.train_x, &d.test_x));
      return ExampleData{d.train_x, d.train_y, d.test_x, d.test_y};
    }
    case ExampleKind::kFashionMlp:
    case ExampleKind::kFashionCnn: {
      PAREX_ASSIGN_OR_RETURN(ClassificationData d,
                             LoadFashionMnist(fashion_dir));
      return ExampleData{d.train_x, d.train_y, d.test_x, d.test_y};
    }
  }
  return Internal("LoadExampleData: unknown example");
}

Tensor CastFloating(const Tensor& t, DType dtype) {
  const bool floating = t.dtype() == DType::kFP32 || t.dtype() == DType::kFP64;
  if (!floating || t.dtype() == dtype) return t;
  Tensor out(dtype, t.dims());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = ElementAt(t, i);
    if (dtype == DType::kFP64) {
      out.data<double>()[i] = v;
    } else {
      out.data<float>()[i] = static_cast<float>(v);
    }
  }
  return out;
}

// ---- Trainer ---------------------------------------------------------------

Status Trainer::RunStartup() {
  auto ran = executor_.Run(model_->startup, scope_, {}, {});
  if (!ran.ok()) return ran.status().WithContext("startup program");
  state_ = TrainerState();
  return Status::Ok();
}

StatusOr<std::vector<double>> Trainer::Train(
    const BatchReader& reader, int64_t epochs, int64_t max_steps,
    const std::function<void(const EpochSummary&)>& on_epoch) {
  using Clock = std::chrono::steady_clock;
  const int64_t batches = reader.num_batches();
  if (batches == 0) {
    return InvalidArgument("train: the reader yields no batch (" +
                           std::to_string(reader.num_rows()) + " rows)");
  }
  if (state_.batch >= batches) {
    return FailedPrecondition("train: the state is at batch " +
                              std::to_string(state_.batch) +
                              " of an epoch of " + std::to_string(batches) +
                              " batches: not the reader it was saved with");
  }
  std::vector<std::string> fetches = {model_->loss};
  if (model_->is_classifier()) fetches.push_back(model_->accuracy);

  std::vector<double> losses;
  std::optional<BatchReader::Iterator> it;
  EpochSummary summary;
  double accuracy_sum = 0;
  Clock::time_point start;
  int64_t ran = 0;
  while (state_.epoch < epochs && (max_steps < 0 || ran < max_steps)) {
    if (!it) {
      it.emplace(reader.Begin(state_.epoch, state_.batch));
      summary = EpochSummary();
      summary.epoch = state_.epoch;
      accuracy_sum = 0;
      start = Clock::now();
    }
    FeedMap batch;
    PAREX_CHECK(it->Next(&batch), "batch iterator ended early");
    auto out = executor_.Run(model_->main, scope_, batch, fetches);
    if (!out.ok()) {
      return out.status().WithContext(
          "train step " + std::to_string(state_.step) + " (epoch " +
          std::to_string(state_.epoch) + ", batch " +
          std::to_string(state_.batch) + ")");
    }
    const double loss = ScalarValue((*out)[0]);
    losses.push_back(loss);
    summary.mean_loss += loss;
    if (model_->is_classifier()) accuracy_sum += ScalarValue((*out)[1]);
    ++summary.steps;
    ++state_.batch;
    ++state_.step;
    ++ran;
    if (state_.batch == batches) {
      summary.mean_loss /= summary.steps;
      summary.mean_accuracy = accuracy_sum / summary.steps;
      summary.seconds =
          std::chrono::duration<double>(Clock::now() - start).count();
      // The state moves on first, so that a checkpoint saved by the
      // callback resumes with the next epoch.
      ++state_.epoch;
      state_.batch = 0;
      it.reset();
      if (on_epoch) on_epoch(summary);
    }
  }
  return losses;
}

StatusOr<const Program*> Trainer::TestProgram() {
  if (!test_program_) {
    auto pruned = Prune(model_->main, {model_->input}, {model_->prediction});
    if (!pruned.ok()) return pruned.status().WithContext("test program");
    test_program_.emplace(std::move(pruned).value());
  }
  return &*test_program_;
}

StatusOr<Tensor> Trainer::Predict(const Tensor& x) {
  PAREX_ASSIGN_OR_RETURN(const Program* test, TestProgram());
  PAREX_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      executor_.Run(*test, scope_, {{model_->input, x}}, {model_->prediction}));
  return out[0];
}

StatusOr<Evaluation> Trainer::Evaluate(const Tensor& x, const Tensor& y,
                                       int64_t batch_size) {
  if (x.rank() < 1 || y.rank() < 1 || x.dim(0) != y.dim(0) || batch_size < 1) {
    return InvalidArgument("evaluate: " + x.DebugString() + " rows for " +
                           y.DebugString() + " labels, batch size " +
                           std::to_string(batch_size));
  }
  Evaluation result;
  result.rows = x.dim(0);
  double sum = 0;
  for (int64_t begin = 0; begin < x.dim(0); begin += batch_size) {
    const int64_t end = std::min(x.dim(0), begin + batch_size);
    PAREX_ASSIGN_OR_RETURN(Tensor pred, Predict(x.Slice(begin, end)));
    const int64_t width = pred.numel() / (end - begin);
    for (int64_t r = 0; r < end - begin; ++r) {
      if (model_->is_classifier()) {
        int64_t best = 0;
        for (int64_t c = 1; c < width; ++c) {
          if (ElementAt(pred, r * width + c) >
              ElementAt(pred, r * width + best)) {
            best = c;
          }
        }
        sum += best == y.data<int64_t>()[begin + r] ? 1 : 0;
      } else {
        const double d = ElementAt(pred, r) - ElementAt(y, begin + r);
        sum += d * d;
      }
    }
  }
  (model_->is_classifier() ? result.accuracy : result.mse) =
      sum / static_cast<double>(result.rows);
  return result;
}

Status Trainer::SaveCheckpoint(const std::string& dir) const {
  PAREX_RETURN_IF_ERROR(parex::SaveCheckpoint(model_->main, dir, *scope_));
  std::ostringstream state;
  state << state_.epoch << " " << state_.batch << " " << state_.step << "\n";
  return WriteFileBytes(dir + "/" + kStateFile, state.str());
}

Status Trainer::LoadCheckpoint(const std::string& dir) {
  const std::string path = dir + "/" + kStateFile;
  if (!FileExists(path)) {
    return NotFound("no checkpoint in '" + dir + "' (" + kStateFile +
                    " is missing)");
  }
  PAREX_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path));
  std::istringstream in(text);
  TrainerState state;
  if (!(in >> state.epoch >> state.batch >> state.step) || state.epoch < 0 ||
      state.batch < 0 || state.step < 0) {
    return DataLoss("checkpoint file '" + path + "' is not 'epoch batch step'");
  }
  PAREX_RETURN_IF_ERROR(parex::LoadCheckpoint(model_->main, dir, scope_));
  state_ = state;
  return Status::Ok();
}

Status Trainer::SaveInferenceModel(const std::string& dir) const {
  return parex::SaveInferenceModel(dir, {model_->input}, {model_->prediction},
                                   model_->main, *scope_);
}

bool HasCheckpoint(const std::string& dir) {
  return FileExists(dir + "/" + kStateFile);
}

}  // namespace parex
