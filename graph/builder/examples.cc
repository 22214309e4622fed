#include "graph/builder/examples.h"

#include <memory>
#include <string>

#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"

namespace parex {
namespace {

struct Built {
  VarDesc* input;
  VarDesc* label;
  VarDesc* loss;
  VarDesc* prediction;
  VarDesc* accuracy;  // nullptr for regression
};

StatusOr<Built> BuildFitALine(ProgramBuilder& b, DType dtype) {
  Built m{};
  PAREX_ASSIGN_OR_RETURN(m.input, layers::Data(b, "x", {13}, dtype));
  PAREX_ASSIGN_OR_RETURN(m.label, layers::Data(b, "y", {1}, dtype));
  layers::FcOptions fc;
  fc.size = 1;
  PAREX_ASSIGN_OR_RETURN(m.prediction, layers::Fc(b, m.input, fc));
  PAREX_ASSIGN_OR_RETURN(VarDesc * cost,
                         layers::SquareErrorCost(b, m.prediction, m.label));
  PAREX_ASSIGN_OR_RETURN(m.loss, layers::Mean(b, cost));
  return m;
}

// logits -> mean(softmax_with_cross_entropy) as the loss; softmax(logits)
// as the prediction and its accuracy, off the loss path.
Status AddClassifierHead(ProgramBuilder& b, VarDesc* logits, Built* m) {
  PAREX_ASSIGN_OR_RETURN(VarDesc * cost,
                         layers::SoftmaxWithCrossEntropy(b, logits, m->label));
  PAREX_ASSIGN_OR_RETURN(m->loss, layers::Mean(b, cost));
  PAREX_ASSIGN_OR_RETURN(m->prediction, layers::Softmax(b, logits));
  PAREX_ASSIGN_OR_RETURN(m->accuracy,
                         layers::Accuracy(b, m->prediction, m->label));
  return Status::Ok();
}

StatusOr<VarDesc*> FcLayer(ProgramBuilder& b, VarDesc* x, int size,
                           const std::string& act) {
  layers::FcOptions fc;
  fc.size = size;
  fc.act = act;
  return layers::Fc(b, x, fc);
}

StatusOr<Built> BuildMlp(ProgramBuilder& b, DType dtype, const Dims& shape,
                         const std::vector<int>& hidden,
                         const std::string& act) {
  Built m{};
  PAREX_ASSIGN_OR_RETURN(m.input, layers::Data(b, "image", shape, dtype));
  PAREX_ASSIGN_OR_RETURN(m.label, layers::Data(b, "label", {1}, DType::kInt64));
  VarDesc* h = m.input;
  for (int size : hidden) {
    PAREX_ASSIGN_OR_RETURN(h, FcLayer(b, h, size, act));
  }
  PAREX_ASSIGN_OR_RETURN(VarDesc * logits, FcLayer(b, h, 10, ""));
  PAREX_RETURN_IF_ERROR(AddClassifierHead(b, logits, &m));
  return m;
}

StatusOr<VarDesc*> ConvBnPool(ProgramBuilder& b, VarDesc* x, int filters) {
  layers::Conv2dOptions conv;
  conv.num_filters = filters;
  conv.filter_size = {5, 5};
  conv.has_bias = false;  // batch_norm's bias takes its place
  PAREX_ASSIGN_OR_RETURN(VarDesc * c, layers::Conv2d(b, x, conv));
  layers::BatchNormOptions bn;
  bn.act = "relu";
  PAREX_ASSIGN_OR_RETURN(VarDesc * n, layers::BatchNorm(b, c, bn));
  layers::Pool2dOptions pool;
  pool.pool_size = {2, 2};
  pool.stride = {2, 2};
  pool.pool_type = "max";
  return layers::Pool2d(b, n, pool);
}

StatusOr<Built> BuildFashionCnn(ProgramBuilder& b, DType dtype) {
  Built m{};
  PAREX_ASSIGN_OR_RETURN(m.input, layers::Data(b, "image", {1, 28, 28}, dtype));
  PAREX_ASSIGN_OR_RETURN(m.label, layers::Data(b, "label", {1}, DType::kInt64));
  PAREX_ASSIGN_OR_RETURN(VarDesc * c1, ConvBnPool(b, m.input, 20));
  PAREX_ASSIGN_OR_RETURN(VarDesc * c2, ConvBnPool(b, c1, 50));
  PAREX_ASSIGN_OR_RETURN(VarDesc * logits, FcLayer(b, c2, 10, ""));
  PAREX_RETURN_IF_ERROR(AddClassifierHead(b, logits, &m));
  return m;
}

std::unique_ptr<Optimizer> MakeOptimizer(ExampleKind kind,
                                         const ExampleOptions& o) {
  const OptimizerKind which = o.optimizer.value_or(
      kind == ExampleKind::kFitALine ? OptimizerKind::kSGD
                                     : OptimizerKind::kAdam);
  const LearningRate lr =
      LearningRate::Constant(o.learning_rate > 0 ? o.learning_rate : 0.001);
  switch (which) {
    case OptimizerKind::kSGD:
      return std::make_unique<SGDOptimizer>(lr);
    case OptimizerKind::kMomentum:
      return std::make_unique<MomentumOptimizer>(lr, o.momentum);
    case OptimizerKind::kAdam:
      return std::make_unique<AdamOptimizer>(lr);
  }
  return nullptr;
}

}  // namespace

const char* ExampleName(ExampleKind kind) {
  switch (kind) {
    case ExampleKind::kFitALine:
      return "fit_a_line";
    case ExampleKind::kDigitsMlp:
      return "digits_mlp";
    case ExampleKind::kFashionMlp:
      return "fashion_mlp";
    case ExampleKind::kFashionCnn:
      return "fashion_cnn";
  }
  return "?";
}

StatusOr<ExampleKind> ParseExampleKind(const std::string& name) {
  for (ExampleKind k : {ExampleKind::kFitALine, ExampleKind::kDigitsMlp,
                        ExampleKind::kFashionMlp, ExampleKind::kFashionCnn}) {
    if (name == ExampleName(k)) return k;
  }
  return InvalidArgument(
      "unknown example model '" + name +
      "' (fit_a_line, digits_mlp, fashion_mlp, fashion_cnn)");
}

StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::kSGD;
  if (name == "momentum") return OptimizerKind::kMomentum;
  if (name == "adam") return OptimizerKind::kAdam;
  return InvalidArgument("unknown optimizer '" + name +
                         "' (sgd, momentum, adam)");
}

StatusOr<ExampleProgram> BuildExample(ExampleKind kind,
                                      const ExampleOptions& options) {
  if (options.dtype != DType::kFP32 && options.dtype != DType::kFP64) {
    return InvalidArgument(std::string(ExampleName(kind)) + ": dtype " +
                           DTypeName(options.dtype) + " is not fp32 or fp64");
  }
  ExampleProgram model{kind, Program(), Program(), "", "", "", "", "", {}};
  ProgramBuilder b(&model.main, &model.startup);
  b.set_random_seed(options.random_seed);
  Built built{};
  switch (kind) {
    case ExampleKind::kFitALine: {
      PAREX_ASSIGN_OR_RETURN(built, BuildFitALine(b, options.dtype));
      break;
    }
    case ExampleKind::kDigitsMlp: {
      PAREX_ASSIGN_OR_RETURN(built,
                             BuildMlp(b, options.dtype, {64}, {512}, "tanh"));
      break;
    }
    case ExampleKind::kFashionMlp: {
      PAREX_ASSIGN_OR_RETURN(
          built, BuildMlp(b, options.dtype, {1, 28, 28}, {256, 128}, "relu"));
      break;
    }
    case ExampleKind::kFashionCnn: {
      PAREX_ASSIGN_OR_RETURN(built, BuildFashionCnn(b, options.dtype));
      break;
    }
  }
  model.input = built.input->name();
  model.label = built.label->name();
  model.loss = built.loss->name();
  model.prediction = built.prediction->name();
  model.accuracy = built.accuracy ? built.accuracy->name() : "";
  if (options.minimize) {
    std::unique_ptr<Optimizer> optimizer = MakeOptimizer(kind, options);
    auto params = optimizer->Minimize(b, built.loss);
    if (!params.ok()) {
      return params.status().WithContext(std::string(ExampleName(kind)) +
                                         ": minimize");
    }
    model.params = std::move(params).value();
  }
  return model;
}

}  // namespace parex
