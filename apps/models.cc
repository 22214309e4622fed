#include "apps/models.h"

#include "apps/datasets.h"
#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/prune.h"
#include "kernels/io/model_io.h"
#include "proto/program_io.h"

namespace parex {
namespace {

double ElementAt(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kFP64) return t.data<double>()[i];
  return t.data<float>()[i];
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

// ---- ExampleInference ------------------------------------------------------

StatusOr<const Program*> ExampleInference::TestProgram() {
  if (!test_program_) {
    auto pruned = Prune(model_->main, {model_->input}, {model_->prediction});
    if (!pruned.ok()) return pruned.status().WithContext("test program");
    test_program_.emplace(std::move(pruned).value());
  }
  return &*test_program_;
}

StatusOr<Tensor> ExampleInference::Predict(const Tensor& x) {
  PAREX_ASSIGN_OR_RETURN(const Program* test, TestProgram());
  PAREX_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      executor_.Run(*test, scope_, {{model_->input, x}}, {model_->prediction}));
  return out[0];
}

StatusOr<Evaluation> ExampleInference::Evaluate(const Tensor& x,
                                                const Tensor& y,
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

Status ExampleInference::SaveInferenceModel(const std::string& dir) const {
  return parex::SaveInferenceModel(dir, {model_->input}, {model_->prediction},
                                   model_->main, *scope_);
}

}  // namespace parex
