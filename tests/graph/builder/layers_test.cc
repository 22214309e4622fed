#include "graph/builder/layers.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/ir/validate.h"

namespace parex::layers {
namespace {

class LayersTest : public ::testing::Test {
 protected:
  LayersTest() : b_(&main_, &startup_) {}

  VarDesc* Input(const std::string& name, const Dims& shape,
                 DType dtype = DType::kFP32) {
    auto v = Data(b_, name, shape, dtype);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return *v;
  }
  const Block& main_block() const { return main_.global_block(); }
  const Block& startup_block() const { return startup_.global_block(); }
  // The startup op writing `var`, or nullptr.
  const OpDesc* InitOp(const std::string& var) const {
    for (const auto& op : startup_block().ops()) {
      if (op->FirstOutput("Out") == var) return op.get();
    }
    return nullptr;
  }
  template <typename T>
  T Attr(const OpDesc& op, const std::string& name) const {
    auto v = op.GetAttr<T>(name);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : T();
  }
  std::vector<std::string> OpTypes() const {
    std::vector<std::string> types;
    for (const auto& op : main_block().ops()) types.push_back(op->type());
    return types;
  }
  void ExpectValid() const {
    Status m = ValidateProgram(main_);
    EXPECT_TRUE(m.ok()) << m.ToString();
    Status s = ValidateProgram(startup_);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  Program main_;
  Program startup_;
  ProgramBuilder b_;
};

TEST_F(LayersTest, DataDeclaresAFeedVarWithBatchDim) {
  VarDesc* x = Input("x", {13});
  EXPECT_EQ(x->name(), "x");
  EXPECT_EQ(x->dims(), (Dims{-1, 13}));
  EXPECT_EQ(x->dtype(), DType::kFP32);
  EXPECT_TRUE(x->stop_gradient());
  EXPECT_FALSE(x->persistable());
  EXPECT_TRUE(x->proto().need_check_feed());
  // A shape with an unknown extent gets no batch dim (Fluid).
  auto y = Data(b_, "y", {-1, 3}, DType::kInt64);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ((*y)->dims(), (Dims{-1, 3}));
  auto z = Data(b_, "z", {2, 3}, DType::kFP64, /*append_batch_size=*/false);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ((*z)->dims(), (Dims{2, 3}));
  EXPECT_EQ((*z)->dtype(), DType::kFP64);
  EXPECT_EQ(startup_block().vars().size(), 0u);
}

TEST_F(LayersTest, DataRejectsDuplicatesAndBadShapes) {
  Input("x", {13});
  auto dup = Data(b_, "x", {13});
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.status().message().find("data"), std::string::npos);
  EXPECT_FALSE(Data(b_, "bad", {-2}).ok());
  EXPECT_FALSE(Data(b_, "", {1}).ok());
}

TEST_F(LayersTest, FcFollowsFluidNaming) {
  VarDesc* x = Input("x", {13});
  FcOptions o;
  o.size = 1;
  auto out = Fc(b_, x, o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->name(), "fc_0.tmp_1");
  EXPECT_EQ((*out)->dims(), (Dims{-1, 1}));

  const VarDesc* w = main_block().FindLocalVar("fc_0.w_0");
  const VarDesc* bias = main_block().FindLocalVar("fc_0.b_0");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(w->dims(), (Dims{13, 1}));
  EXPECT_EQ(bias->dims(), (Dims{1}));
  for (const VarDesc* p : {w, bias}) {
    EXPECT_TRUE(p->persistable());
    EXPECT_TRUE(p->is_parameter());
    EXPECT_FALSE(p->stop_gradient());
    const VarDesc* s = startup_block().FindLocalVar(p->name());
    ASSERT_NE(s, nullptr) << p->name();
    EXPECT_EQ(s->dims(), p->dims());
    EXPECT_TRUE(s->persistable());
  }
  EXPECT_EQ(main_block().FindLocalVar("fc_0.tmp_0")->dims(), (Dims{-1, 1}));

  ASSERT_EQ(OpTypes(), (std::vector<std::string>{"mul", "elementwise_add"}));
  const OpDesc& mul = main_block().op(0);
  EXPECT_EQ(mul.Input("X"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(mul.Input("Y"), (std::vector<std::string>{"fc_0.w_0"}));
  EXPECT_EQ(mul.Output("Out"), (std::vector<std::string>{"fc_0.tmp_0"}));
  EXPECT_EQ(Attr<int>(mul, "x_num_col_dims"), 1);
  EXPECT_EQ(Attr<int>(mul, "y_num_col_dims"), 1);
  EXPECT_EQ(Attr<int>(mul, "op_role"), 0);
  EXPECT_TRUE(mul.HasAttr("op_role"));
  const OpDesc& add = main_block().op(1);
  EXPECT_EQ(add.Input("Y"), (std::vector<std::string>{"fc_0.b_0"}));
  EXPECT_EQ(Attr<int>(add, "axis"), 1);
  EXPECT_EQ(Attr<int>(add, "op_role"), 0);
  ExpectValid();
}

TEST_F(LayersTest, FcStartupHoldsXavierAndConstantInitializers) {
  VarDesc* x = Input("x", {13});
  FcOptions o;
  o.size = 1;
  ASSERT_TRUE(Fc(b_, x, o).ok());
  ASSERT_EQ(startup_block().num_ops(), 2);
  const OpDesc* w = InitOp("fc_0.w_0");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->type(), "uniform_random");
  const float limit = static_cast<float>(std::sqrt(6.0 / (13 + 1)));
  EXPECT_FLOAT_EQ(Attr<float>(*w, "min"), -limit);
  EXPECT_FLOAT_EQ(Attr<float>(*w, "max"), limit);
  EXPECT_EQ(Attr<std::vector<int64_t>>(*w, "shape"),
            (std::vector<int64_t>{13, 1}));
  EXPECT_EQ(Attr<int>(*w, "dtype"), static_cast<int>(DType::kFP32));
  EXPECT_EQ(Attr<int>(*w, "seed"), 0);
  EXPECT_EQ(Attr<int>(*w, "op_role"), 0);
  const OpDesc* bias = InitOp("fc_0.b_0");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->type(), "fill_constant");
  EXPECT_FLOAT_EQ(Attr<float>(*bias, "value"), 0.0f);
  EXPECT_EQ(Attr<std::vector<int64_t>>(*bias, "shape"),
            (std::vector<int64_t>{1}));
  ExpectValid();
}

TEST_F(LayersTest, FcActivationAndSecondLayerNames) {
  VarDesc* x = Input("x", {4});
  FcOptions o;
  o.size = 8;
  o.act = "relu";
  auto h = Fc(b_, x, o);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)->name(), "fc_0.tmp_2");
  o.act = "softmax";
  o.size = 3;
  auto y = Fc(b_, *h, o);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ((*y)->name(), "fc_1.tmp_2");
  EXPECT_EQ((*y)->dims(), (Dims{-1, 3}));
  EXPECT_EQ(main_block().FindLocalVar("fc_1.w_0")->dims(), (Dims{8, 3}));
  EXPECT_EQ(OpTypes(),
            (std::vector<std::string>{"mul", "elementwise_add", "relu", "mul",
                                      "elementwise_add", "softmax"}));
  // Without bias: mul then the activation.
  o.has_bias = false;
  o.act = "tanh";
  auto z = Fc(b_, *y, o);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ((*z)->name(), "fc_2.tmp_1");
  EXPECT_EQ(main_block().FindLocalVar("fc_2.b_0"), nullptr);
  ExpectValid();
}

TEST_F(LayersTest, FcFlattensTrailingDims) {
  VarDesc* x = Input("x", {2, 3, 4});
  FcOptions o;
  o.size = 5;
  o.num_flatten_dims = 2;
  auto out = Fc(b_, x, o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(main_block().FindLocalVar("fc_0.w_0")->dims(), (Dims{12, 5}));
  EXPECT_EQ((*out)->dims(), (Dims{-1, 2, 5}));
  EXPECT_EQ(Attr<int>(main_block().op(0), "x_num_col_dims"), 2);
  EXPECT_EQ(Attr<int>(main_block().op(1), "axis"), 2);
}

TEST_F(LayersTest, RandomInitializersTakeTheProgramSeed) {
  b_.set_random_seed(90);
  VarDesc* x = Input("x", {6});
  FcOptions o;
  o.size = 4;
  ASSERT_TRUE(Fc(b_, x, o).ok());
  EXPECT_EQ(Attr<int>(*InitOp("fc_0.w_0"), "seed"), 90);
  o.param_attr.initializer = Initializer::Uniform(-0.5, 0.25, /*seed=*/7);
  ASSERT_TRUE(Fc(b_, x, o).ok());
  const OpDesc* w = InitOp("fc_1.w_0");
  EXPECT_EQ(w->type(), "uniform_random");
  EXPECT_EQ(Attr<int>(*w, "seed"), 7);
  EXPECT_FLOAT_EQ(Attr<float>(*w, "min"), -0.5f);
  EXPECT_FLOAT_EQ(Attr<float>(*w, "max"), 0.25f);
}

TEST_F(LayersTest, InitializerKinds) {
  VarDesc* x = Input("x", {6});
  struct Case {
    ::parex::Initializer init;
    std::string type;
    std::string attr;
    double expected;
  };
  // w is [6, 4]: fan_in 6, fan_out 4.
  const std::vector<Case> cases = {
      {Initializer::Constant(0.5), "fill_constant", "value", 0.5},
      {Initializer::Normal(1.0, 0.1), "gaussian_random", "std", 0.1},
      {Initializer::Xavier(/*uniform=*/false), "gaussian_random", "std",
       std::sqrt(2.0 / 10)},
      {Initializer::MSRA(/*uniform=*/true), "uniform_random", "max",
       std::sqrt(6.0 / 6)},
      {Initializer::MSRA(/*uniform=*/false), "gaussian_random", "std",
       std::sqrt(2.0 / 6)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    FcOptions o;
    o.size = 4;
    o.param_attr.initializer = cases[i].init;
    o.bias_attr.initializer = Initializer::Constant(0.25);
    ASSERT_TRUE(Fc(b_, x, o).ok());
    const std::string fc = "fc_" + std::to_string(i);
    const OpDesc* w = InitOp(fc + ".w_0");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->type(), cases[i].type) << i;
    EXPECT_FLOAT_EQ(Attr<float>(*w, cases[i].attr),
                    static_cast<float>(cases[i].expected))
        << i;
    EXPECT_FLOAT_EQ(Attr<float>(*InitOp(fc + ".b_0"), "value"), 0.25f);
  }
  ExpectValid();
}

TEST_F(LayersTest, ParamAttrNamesAndSharesParameters) {
  VarDesc* x = Input("x", {4});
  FcOptions o;
  o.size = 4;
  o.has_bias = false;
  o.param_attr.name = "shared_w";
  auto a = Fc(b_, x, o);
  ASSERT_TRUE(a.ok());
  auto c = Fc(b_, *a, o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(main_block().op(0).FirstInput("Y"), "shared_w");
  EXPECT_EQ(main_block().op(1).FirstInput("Y"), "shared_w");
  EXPECT_EQ(startup_block().num_ops(), 1);  // one initializer
  // A parameter of another shape cannot take the name.
  o.size = 2;
  auto bad = Fc(b_, *c, o);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("shared_w"), std::string::npos);
  // Not trainable: stop_gradient.
  FcOptions frozen;
  frozen.size = 2;
  frozen.param_attr.trainable = false;
  ASSERT_TRUE(Fc(b_, x, frozen).ok());
  EXPECT_TRUE(main_block().FindLocalVar("fc_3.w_0")->stop_gradient());
}

TEST_F(LayersTest, Conv2dAndPool2d) {
  VarDesc* img = Input("img", {3, 8, 8});
  Conv2dOptions c;
  c.num_filters = 4;
  c.filter_size = {3, 3};
  c.padding = {1, 1};
  c.act = "relu";
  auto conv = Conv2d(b_, img, c);
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  EXPECT_EQ((*conv)->name(), "conv2d_0.tmp_2");
  EXPECT_EQ((*conv)->dims(), (Dims{-1, 4, 8, 8}));
  EXPECT_EQ(main_block().FindLocalVar("conv2d_0.w_0")->dims(),
            (Dims{4, 3, 3, 3}));
  EXPECT_EQ(main_block().FindLocalVar("conv2d_0.b_0")->dims(), (Dims{4}));
  const OpDesc* w = InitOp("conv2d_0.w_0");
  EXPECT_EQ(w->type(), "gaussian_random");
  EXPECT_FLOAT_EQ(Attr<float>(*w, "mean"), 0.0f);
  EXPECT_FLOAT_EQ(Attr<float>(*w, "std"),
                  static_cast<float>(std::sqrt(2.0 / 27)));
  const OpDesc& op = main_block().op(0);
  EXPECT_EQ(op.type(), "conv2d");
  EXPECT_EQ(Attr<std::vector<int>>(op, "paddings"), (std::vector<int>{1, 1}));
  EXPECT_EQ(Attr<int>(main_block().op(1), "axis"), 1);  // bias per channel

  Pool2dOptions p;
  p.pool_size = {2, 2};
  p.stride = {2, 2};
  auto pool = Pool2d(b_, *conv, p);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->name(), "pool2d_0.tmp_0");
  EXPECT_EQ((*pool)->dims(), (Dims{-1, 4, 4, 4}));
  EXPECT_EQ(Attr<std::string>(main_block().op(3), "pooling_type"), "max");
  ExpectValid();
}

TEST_F(LayersTest, BatchNormParametersAndStatistics) {
  VarDesc* img = Input("img", {3, 4, 4});
  BatchNormOptions o;
  o.act = "relu";
  auto y = BatchNorm(b_, img, o);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ((*y)->name(), "batch_norm_0.tmp_4");  // relu after Y
  const Block& m = main_block();
  struct Param {
    const char* name;
    bool trainable;
    float init;
  };
  for (const Param& p : {Param{"batch_norm_0.w_0", true, 1.0f},
                         Param{"batch_norm_0.b_0", true, 0.0f},
                         Param{"batch_norm_0.w_1", false, 0.0f},
                         Param{"batch_norm_0.w_2", false, 1.0f}}) {
    const VarDesc* v = m.FindLocalVar(p.name);
    ASSERT_NE(v, nullptr) << p.name;
    EXPECT_EQ(v->dims(), (Dims{3}));
    EXPECT_TRUE(v->persistable());
    EXPECT_EQ(v->stop_gradient(), !p.trainable) << p.name;
    const OpDesc* init = InitOp(p.name);
    ASSERT_NE(init, nullptr);
    EXPECT_EQ(init->type(), "fill_constant");
    EXPECT_FLOAT_EQ(Attr<float>(*init, "value"), p.init) << p.name;
  }
  const OpDesc& bn = m.op(0);
  EXPECT_EQ(bn.type(), "batch_norm");
  EXPECT_EQ(bn.FirstOutput("MeanOut"), "batch_norm_0.w_1");
  EXPECT_EQ(bn.FirstOutput("VarianceOut"), "batch_norm_0.w_2");
  // Paddle 2.x order: SavedMean tmp_0, SavedVariance tmp_1, ReserveSpace
  // tmp_2 (training only), Y tmp_3.
  EXPECT_EQ(bn.FirstOutput("ReserveSpace"), "batch_norm_0.tmp_2");
  EXPECT_EQ(bn.FirstOutput("Y"), "batch_norm_0.tmp_3");
  EXPECT_TRUE(m.FindLocalVar(bn.FirstOutput("SavedMean"))->stop_gradient());
  EXPECT_FLOAT_EQ(Attr<float>(bn, "momentum"), 0.9f);
  EXPECT_EQ(m.FindLocalVar("batch_norm_0.tmp_3")->dims(), (Dims{-1, 3, 4, 4}));
  ExpectValid();
}

TEST_F(LayersTest, EmbeddingDropoutAndLosses) {
  VarDesc* ids = Input("ids", {1}, DType::kInt64);
  auto emb = Embedding(b_, ids, 100, 8, {}, -1);
  ASSERT_TRUE(emb.ok()) << emb.status().ToString();
  EXPECT_EQ((*emb)->name(), "embedding_0.tmp_0");
  EXPECT_EQ((*emb)->dims(), (Dims{-1, 8}));
  EXPECT_EQ(main_block().FindLocalVar("embedding_0.w_0")->dims(),
            (Dims{100, 8}));
  EXPECT_EQ(main_block().op(0).type(), "lookup_table");
  EXPECT_EQ(Attr<int64_t>(main_block().op(0), "padding_idx"), -1);

  b_.set_random_seed(5);
  auto drop = Dropout(b_, *emb, 0.25f);
  ASSERT_TRUE(drop.ok()) << drop.status().ToString();
  EXPECT_EQ((*drop)->name(), "dropout_0.tmp_0");
  const OpDesc& d = main_block().op(1);
  EXPECT_EQ(Attr<int>(d, "seed"), 5);
  EXPECT_TRUE(Attr<bool>(d, "fix_seed"));
  EXPECT_TRUE(main_block().FindLocalVar("dropout_0.tmp_1")->stop_gradient());

  FcOptions o;
  o.size = 5;
  auto logits = Fc(b_, *drop, o);
  ASSERT_TRUE(logits.ok());
  VarDesc* label = Input("label", {1}, DType::kInt64);
  auto loss = SoftmaxWithCrossEntropy(b_, *logits, label);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  EXPECT_EQ((*loss)->name(), "softmax_with_cross_entropy_0.tmp_1");
  EXPECT_EQ((*loss)->dims(), (Dims{-1, 1}));
  auto avg = Mean(b_, *loss);
  ASSERT_TRUE(avg.ok());
  EXPECT_EQ((*avg)->name(), "mean_0.tmp_0");
  EXPECT_EQ((*avg)->dims(), (Dims{1}));

  auto acc = Accuracy(b_, *logits, label, 1);
  ASSERT_TRUE(acc.ok()) << acc.status().ToString();
  EXPECT_EQ((*acc)->name(), "accuracy_0.tmp_0");
  EXPECT_EQ((*acc)->dims(), (Dims{1}));
  const OpDesc& top_k = main_block().op(main_block().num_ops() - 2);
  EXPECT_EQ(top_k.type(), "top_k");
  EXPECT_EQ(top_k.FirstOutput("Indices"), "top_k_0.tmp_1");
  ExpectValid();
}

TEST_F(LayersTest, SquareErrorCostAndCrossEntropy) {
  VarDesc* x = Input("x", {3});
  VarDesc* y = Input("y", {3});
  auto cost = SquareErrorCost(b_, x, y);
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  EXPECT_EQ((*cost)->name(), "square_error_cost_0.tmp_1");
  EXPECT_EQ(OpTypes(), (std::vector<std::string>{"elementwise_sub", "square"}));
  auto prob = Softmax(b_, x);
  ASSERT_TRUE(prob.ok());
  EXPECT_EQ((*prob)->name(), "softmax_0.tmp_0");
  VarDesc* label = Input("label", {1}, DType::kInt64);
  auto ce = CrossEntropy(b_, *prob, label);
  ASSERT_TRUE(ce.ok()) << ce.status().ToString();
  EXPECT_EQ((*ce)->name(), "cross_entropy_0.tmp_0");
  EXPECT_EQ((*ce)->dims(), (Dims{-1, 1}));
  auto r = Relu(b_, x);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->name(), "relu_0.tmp_0");
  auto same = Activation(b_, x, "");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, x);
  ExpectValid();
}

TEST_F(LayersTest, ErrorsNameTheLayer) {
  VarDesc* x = Input("x", {4});
  FcOptions o;
  o.size = 2;
  o.act = "gelu_typo";
  auto bad_act = Fc(b_, x, o);
  ASSERT_EQ(bad_act.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_act.status().message().find("fc"), std::string::npos);
  EXPECT_NE(bad_act.status().message().find("gelu_typo"), std::string::npos);
  EXPECT_EQ(main_block().num_ops(), 0);  // nothing appended
  EXPECT_EQ(startup_block().num_ops(), 0);

  o.act = "";
  o.num_flatten_dims = 2;  // x has rank 2
  EXPECT_EQ(Fc(b_, x, o).status().code(), StatusCode::kInvalidArgument);
  o.num_flatten_dims = 1;
  o.size = 0;
  EXPECT_FALSE(Fc(b_, x, o).ok());

  Conv2dOptions c;
  c.num_filters = 2;
  auto conv = Conv2d(b_, x, c);  // rank 2, not NCHW
  ASSERT_EQ(conv.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(conv.status().message().find("conv2d"), std::string::npos);
  EXPECT_NE(Pool2d(b_, x, Pool2dOptions()).status().message().find("pool2d"),
            std::string::npos);
  VarDesc* img = Input("img", {3, 4, 4});
  Pool2dOptions p;
  p.pool_type = "median";
  EXPECT_FALSE(Pool2d(b_, img, p).ok());
  c.groups = 2;  // 3 channels
  EXPECT_FALSE(Conv2d(b_, img, c).ok());
  VarDesc* vec = Input("vec", {}, DType::kFP32);  // [-1]
  EXPECT_NE(BatchNorm(b_, vec, {}).status().message().find("batch_norm"),
            std::string::npos);
  auto emb = Embedding(b_, x, 10, 4);  // fp32 ids
  ASSERT_EQ(emb.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(emb.status().message().find("embedding"), std::string::npos);
  VarDesc* label3 = Input("label3", {1, 1}, DType::kInt64);  // rank 3
  auto ce = SoftmaxWithCrossEntropy(b_, x, label3);
  ASSERT_EQ(ce.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ce.status().message().find("softmax_with_cross_entropy"),
            std::string::npos);
  EXPECT_FALSE(Activation(b_, x, "swish").ok());
  EXPECT_FALSE(Dropout(b_, x, 1.5f).ok());
  EXPECT_FALSE(Softmax(b_, x, 2).ok());
  EXPECT_FALSE(Fc(b_, nullptr, FcOptions()).ok());
  EXPECT_EQ(main_block().num_ops(), 0);
}

TEST_F(LayersTest, AppendOpChecksAndInfersShapes) {
  VarDesc* x = Input("x", {3});
  auto unknown = b_.AppendOp("no_such_op", {}, {});
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  auto undeclared = b_.AppendOp("relu", {{"X", {"nope"}}}, {{"Out", {"o"}}});
  EXPECT_EQ(undeclared.status().code(), StatusCode::kNotFound);
  EXPECT_NE(undeclared.status().message().find("nope"), std::string::npos);
  EXPECT_EQ(main_block().num_ops(), 0);

  // Output vars are declared and get inferred shapes; attributes are set
  // before inference; op_role as given.
  auto op = b_.AppendOp(
      "scale", {{"X", {"x"}}}, {{"Out", {"y"}}},
      [](OpDesc& o) { o.SetAttr<float>("scale", 2.0f); }, /*op_role=*/0x2);
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  EXPECT_EQ(main_block().FindLocalVar("y")->dims(), (Dims{-1, 3}));
  EXPECT_EQ(Attr<int>(**op, "op_role"), 0x2);
  EXPECT_FLOAT_EQ(Attr<float>(**op, "scale"), 2.0f);

  // Shape inference errors name the op.
  VarDesc* w = *b_.CreateParameter("w", {4, 2}, DType::kFP32,
                                   Initializer::Constant(1), {});
  auto mismatch = b_.AppendOp("mul", {{"X", {x->name()}}, {"Y", {w->name()}}},
                              {{"Out", {"z"}}});
  ASSERT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.status().message().find("'mul'"), std::string::npos);
}

TEST_F(LayersTest, CreatePersistableAndTemporaries) {
  auto lr = b_.CreatePersistable("learning_rate_0", {1}, DType::kFP32, 0.1);
  ASSERT_TRUE(lr.ok()) << lr.status().ToString();
  EXPECT_TRUE((*lr)->persistable());
  EXPECT_TRUE((*lr)->stop_gradient());
  EXPECT_FALSE((*lr)->is_parameter());
  const OpDesc* fill = InitOp("learning_rate_0");
  ASSERT_NE(fill, nullptr);
  EXPECT_FLOAT_EQ(Attr<float>(*fill, "value"), 0.1f);
  auto again = b_.CreatePersistable("learning_rate_0", {1}, DType::kFP32, 0.1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *lr);
  EXPECT_FALSE(
      b_.CreatePersistable("learning_rate_0", {2}, DType::kFP32, 0).ok());
  EXPECT_EQ(b_.UniqueName("fc"), "fc_0");
  EXPECT_EQ(b_.UniqueName("fc"), "fc_1");
  EXPECT_EQ(b_.CreateTemporary("fc_1")->name(), "fc_1.tmp_0");
  EXPECT_EQ(b_.CreateTemporary("fc_1", DType::kFP64)->dtype(), DType::kFP64);
  EXPECT_EQ(b_.CreateTemporary("fc_1")->name(), "fc_1.tmp_2");
  ExpectValid();
}

}  // namespace
}  // namespace parex::layers
