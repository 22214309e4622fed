// Every example program of apps/models.h, built in fp64: the parameter
// gradients of the program AppendBackward makes match central finite
// differences of the loss, on a small batch of real data.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "apps/datasets.h"
#include "apps/models.h"
#include "graph/builder/backward.h"

namespace parex {
namespace {

const std::string kData = PAREX_DATA_DIR;

// A few rows of the example's real data, in fp64.
StatusOr<FeedMap> SmallBatch(const ExampleProgram& model, int64_t rows) {
  Tensor x, y;
  switch (model.kind) {
    case ExampleKind::kFitALine: {
      PAREX_ASSIGN_OR_RETURN(
          HousingData d, LoadUciHousing(kData + "/boston_house_prices.csv"));
      x = d.train_x, y = d.train_y;
      break;
    }
    case ExampleKind::kDigitsMlp: {
      PAREX_ASSIGN_OR_RETURN(ClassificationData d,
                             LoadDigits(kData + "/digits.csv.gz"));
      x = d.train_x, y = d.train_y;
      break;
    }
    case ExampleKind::kFashionMlp:
    case ExampleKind::kFashionCnn: {
      const std::string dir = kFashionMnistDir;
      PAREX_ASSIGN_OR_RETURN(Tensor images,
                             ReadIdxImages(dir + "/t10k-images-idx3-ubyte.gz"));
      PAREX_ASSIGN_OR_RETURN(y,
                             ReadIdxLabels(dir + "/t10k-labels-idx1-ubyte.gz"));
      x = Tensor(DType::kFP64, {rows, 1, 28, 28});
      for (int64_t i = 0; i < x.numel(); ++i) {
        x.data<double>()[i] = images.data<uint8_t>()[i] / 255.0 * 2 - 1;
      }
      break;
    }
  }
  return FeedMap{{model.input, CastFloating(x.Slice(0, rows), DType::kFP64)},
                 {model.label, CastFloating(y.Slice(0, rows), DType::kFP64)}};
}

double Value(const Tensor& t, int64_t i) { return t.data<double>()[i]; }

void CheckGradients(ExampleKind kind, int64_t rows, int samples_per_param,
                    size_t expected_params) {
  if ((kind == ExampleKind::kFashionMlp || kind == ExampleKind::kFashionCnn) &&
      !std::ifstream(std::string(kFashionMnistDir) +
                     "/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed";
  }
  ExampleOptions options;
  options.dtype = DType::kFP64;
  options.minimize = false;
  options.random_seed = 7;
  auto model = BuildExample(kind, options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const Program forward = model->main;
  auto params = AppendBackward(&model->main, model->loss);
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  ASSERT_EQ(params->size(), expected_params);
  auto feeds = SmallBatch(*model, rows);
  ASSERT_TRUE(feeds.ok()) << feeds.status().ToString();

  Scope scope;
  ReferenceExecutor executor;
  ASSERT_TRUE(executor.Run(model->startup, &scope, {}, {}).ok());
  std::vector<std::string> fetches = {model->loss};
  for (const ParamGrad& pg : *params) fetches.push_back(pg.grad);
  auto analytic = executor.Run(model->main, &scope, *feeds, fetches);
  ASSERT_TRUE(analytic.ok()) << analytic.status().ToString();

  auto loss_at = [&]() {
    auto out = executor.Run(forward, &scope, *feeds, {model->loss});
    PAREX_CHECK(out.ok(), out.status().ToString());
    return Value((*out)[0], 0);
  };
  std::mt19937_64 rng(123);
  for (size_t p = 0; p < params->size(); ++p) {
    const ParamGrad& pg = (*params)[p];
    Tensor* w = scope.FindVar(pg.param)->GetMutableTensor();
    const Tensor& grad = (*analytic)[p + 1];
    ASSERT_EQ(grad.dims(), w->dims()) << pg.grad;
    // Small parameters entirely, large ones at sampled elements.
    std::vector<int64_t> elements;
    if (w->numel() <= samples_per_param) {
      for (int64_t i = 0; i < w->numel(); ++i) elements.push_back(i);
    } else {
      for (int k = 0; k < samples_per_param; ++k) {
        elements.push_back(static_cast<int64_t>(rng() % w->numel()));
      }
    }
    for (int64_t i : elements) {
      double& v = w->data<double>()[i];
      const double saved = v;
      const double eps = 1e-6 * std::max(1.0, std::fabs(saved));
      v = saved + eps;
      const double plus = loss_at();
      v = saved - eps;
      const double minus = loss_at();
      v = saved;
      const double numeric = (plus - minus) / (2 * eps);
      const double got = Value(grad, i);
      EXPECT_NEAR(got, numeric, 1e-6 + 1e-5 * std::fabs(numeric))
          << ExampleName(kind) << " " << pg.grad << "[" << i << "]";
    }
  }
}

TEST(ProgramGradientTest, FitALine) {
  CheckGradients(ExampleKind::kFitALine, 8, 32, 2);
}

TEST(ProgramGradientTest, DigitsMlp) {
  CheckGradients(ExampleKind::kDigitsMlp, 8, 32, 4);
}

TEST(ProgramGradientTest, FashionMlp) {
  CheckGradients(ExampleKind::kFashionMlp, 4, 24, 6);
}

TEST(ProgramGradientTest, FashionCnn) {
  // conv, bn scale, bn bias, twice; fc weight and bias.
  CheckGradients(ExampleKind::kFashionCnn, 4, 24, 8);
}

}  // namespace
}  // namespace parex
