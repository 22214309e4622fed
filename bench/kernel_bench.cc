// kernel_bench: parex's mul, matmul, conv2d and conv2d_grad CPU kernels
// (and channels-last 1x1 conv2d against oneDNN's own, issue 34),
// run as the executor runs them (a PreparedOp of a one-op Program on a
// Scope, fp32: shapes inferred once, oneDNN primitives cached), against
// peers measured in the same run:
//   - cblas_sgemm (OpenBLAS) and dnnl_sgemm (oneDNN, what parex's fp32
//     GEMMs of these sizes call) on the same GEMM shape; for conv2d the
//     im2col GEMM shapes (N products [M, C*K*K] x [C*K*K, OH*OW], without
//     the im2col itself);
//   - oneDNN's direct convolution on the same NCHW / OIHW tensors, when
//     built with PAREX_BENCH_WITH_DNNL;
//   - parex's own im2col path (conv2d and conv2d_grad with oneDNN switched
//     off, kernels/cpu/spatial/dnnl_conv.h), which fp64 and the tests use.
// Every side runs on one thread: parex's kernels are single-threaded by
// design (parallelism is the executor's), so OpenBLAS is pinned to one
// thread and, unless the caller chose OMP_NUM_THREADS, the program re-runs
// itself with OMP_NUM_THREADS=1 for oneDNN's OpenMP runtime (which reads
// it at process start).
//
// Prints Google Benchmark's report (with a GFLOP/s counter), then a table
// of parex / peer time per shape. Sizes are the MLP and LeNet ones of the
// examples; the whole run takes well under a minute.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/ir/program.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/spatial/dnnl_conv.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "kernels/prepared_op.h"
#include "kernels/scope.h"

#ifdef PAREX_BENCH_WITH_DNNL
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace {

constexpr double kMinTimeSeconds = 0.3;

struct GemmShape {
  const char* name;
  int64_t m, k, n;
};

// fc layers of an MNIST MLP (784-256-10) and of LeNet (800-500-10), batch 64.
const GemmShape kGemmShapes[] = {
    {"mlp_fc1", 64, 784, 256},
    {"mlp_fc2", 64, 256, 10},
    {"lenet_fc1", 64, 800, 500},
    {"lenet_fc2", 64, 500, 10},
};

struct ConvShape {
  const char* name;
  int64_t n, c, h, w, m, k;
  int64_t stride = 1, pad = 0;
  bool image = false;  // the input is a feed: conv2d_grad makes no Input@GRAD
  int64_t oh() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - k) / stride + 1; }
  double flops() const { return 2.0 * n * m * oh() * ow() * c * k * k; }
};

// LeNet-5's convolutions on MNIST (the Fashion CNN's), batch 64, and two of
// a ResNet-50 stage's (3x3 and 1x1 at 56x56, batch 8): channel counts that
// are and are not multiples of oneDNN's 16-channel blocks.
const ConvShape kConvShapes[] = {
    {"lenet_conv1", 64, 1, 28, 28, 20, 5},
    {"lenet_conv2", 64, 20, 12, 12, 50, 5},
    {"resnet_3x3", 8, 64, 58, 58, 64, 3},
    {"resnet_1x1", 8, 256, 56, 56, 64, 1},
    // ResNet-18 training at 64 px, batch 32 (bench/python/train_peers.py):
    // the 7x7 stem on the image's 3 channels and a downsampling 1x1.
    {"r18_stem_7x7_s2", 32, 3, 64, 64, 64, 7, 2, 3, true},
    {"r18_down_1x1_s2", 32, 64, 16, 16, 128, 1, 2, 0},
    {"mbv1_stem_3x3_s2", 32, 3, 64, 64, 32, 3, 2, 1, true},
    {"r18_down_1x1_s2_wide", 32, 256, 4, 4, 512, 1, 2, 0},
    // ResNet-50's last stage at 64 px: a 1x1 of stride 1 on a 2x2 plane.
    {"r50_1x1_on_2x2", 32, 512, 2, 2, 2048, 1},
    {"r50_1x1_on_4x4", 32, 1024, 4, 4, 256, 1},
    {"r50_1x1_on_8x8", 32, 512, 8, 8, 128, 1},
    {"r50_1x1_on_16x16", 32, 256, 16, 16, 64, 1},
    // ResNet-18's 3x3s at 64 px, batch 32: its first and last stages.
    {"r18_3x3_64_on_16x16", 32, 64, 16, 16, 64, 3, 1, 1},
    {"r18_3x3_128_on_8x8", 32, 128, 8, 8, 128, 3, 1, 1},
    {"r18_3x3_256_on_4x4", 32, 256, 4, 4, 256, 3, 1, 1},
    {"r18_3x3_512_on_2x2", 32, 512, 2, 2, 512, 3, 1, 1},
};

// The 1x1 convolutions of MobileNet-v1 at 64 px (batch 1, and the widest
// at batch 32), channels-last with a Bias and a fused relu, as `parex
// infer` runs them: parex takes them as oneDNN matmuls (Pointwise in
// kernels/cpu/spatial/dnnl_conv.cc); the peer is oneDNN's own 1x1
// convolution on the same NHWC tensors. The `_cold` runs read 64 MiB
// between calls, so that the filter comes from memory as in a whole model
// (MobileNet-v1's filters are 17 MB).
struct PointwiseShape {
  const char* name;
  int64_t n, c, hw, m;
};
const PointwiseShape kPointwiseShapes[] = {
    {"mbv1_512_on_4x4", 1, 512, 4, 512},
    {"mbv1_1024_on_2x2", 1, 1024, 2, 1024},
    {"mbv1_128_on_16x16", 1, 128, 16, 128},
    {"mbv1_1024_on_2x2_b32", 32, 1024, 2, 1024},
};

std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

void SetGflops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One op of a Program with random fp32 inputs in a Scope, prepared once and
// run as the executor runs it (PreparedOp: bound once, shapes inferred and
// outputs allocated when input shapes change, then the kernel).
class OpFixture {
 public:
  explicit OpFixture(const std::string& type)
      : op_(program_.global_block().AppendOp(type)) {}

  OpFixture& Input(const std::string& slot, const parex::Dims& dims) {
    const std::string name = slot + "_0";
    parex::Tensor t(parex::DType::kFP32, dims);
    std::vector<float> v = RandomFloats(t.numel(), seed_++);
    std::memcpy(t.raw_data(), v.data(), t.bytes());
    *scope_.Var(name)->GetMutableTensor() = t;
    op_->SetInput(slot, {name});
    return *this;
  }
  OpFixture& Output(const std::string& slot) {
    op_->SetOutput(slot, {slot + "_0"});
    return *this;
  }
  template <typename T>
  OpFixture& Attr(const std::string& name, T value) {
    op_->SetAttr(name, std::move(value));
    return *this;
  }
  parex::Status Run() {
    if (prepared_ == nullptr) {
      auto prepared = parex::PreparedOp::Prepare(*op_, &scope_, &device_);
      if (!prepared.ok()) return prepared.status();
      prepared_ = std::move(*prepared);
    }
    return prepared_->Run();
  }

 private:
  std::unique_ptr<parex::PreparedOp> prepared_;
  parex::Program program_;
  parex::OpDesc* op_;
  parex::Scope scope_;
  parex::CpuDeviceContext device_;
  uint32_t seed_ = 1;
};

// Reads 64 MiB outside the timed region: what the next call reads comes
// from memory, not a cache.
void EvictCaches(benchmark::State& state) {
  static std::vector<float> junk(16 << 20, 1.0f);
  state.PauseTiming();
  float sum = 0;
  for (size_t i = 0; i < junk.size(); i += 16) sum += junk[i];
  benchmark::DoNotOptimize(sum);
  state.ResumeTiming();
}

void RunFixture(benchmark::State& state, OpFixture& op, bool cold = false) {
  parex::Status status = op.Run();  // warm-up: allocates the outputs
  if (!status.ok()) {
    state.SkipWithError(status.ToString().c_str());
    return;
  }
  for (auto _ : state) {
    if (cold) EvictCaches(state);
    status = op.Run();
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
  }
}

void BM_ParexGemmOp(benchmark::State& state, const char* type, GemmShape s) {
  OpFixture op(type);
  op.Input("X", {s.m, s.k}).Input("Y", {s.k, s.n}).Output("Out");
  RunFixture(state, op);
  SetGflops(state, 2.0 * s.m * s.k * s.n);
}

void BM_CblasSgemm(benchmark::State& state, GemmShape s) {
  std::vector<float> a = RandomFloats(s.m * s.k, 1);
  std::vector<float> b = RandomFloats(s.k * s.n, 2);
  std::vector<float> c(s.m * s.n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f,
                a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  }
  SetGflops(state, 2.0 * s.m * s.k * s.n);
}

#ifdef PAREX_BENCH_WITH_DNNL
// oneDNN's sgemm, which parex's fp32 GEMMs of these sizes call.
void BM_DnnlSgemm(benchmark::State& state, GemmShape s) {
  std::vector<float> a = RandomFloats(s.m * s.k, 1);
  std::vector<float> b = RandomFloats(s.k * s.n, 2);
  std::vector<float> c(s.m * s.n);
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n,
               0.0f, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  }
  SetGflops(state, 2.0 * s.m * s.k * s.n);
}
#endif

// parex's conv2d (`grad`: conv2d_grad, both gradients), through oneDNN or
// (`dnnl` false) its im2col path.
void BM_ParexConv2d(benchmark::State& state, ConvShape s, bool grad,
                    bool dnnl) {
  parex::cpu::SetDnnlConvMode(dnnl ? parex::cpu::DnnlConvMode::kAlways
                                   : parex::cpu::DnnlConvMode::kNever);
  OpFixture op(grad ? "conv2d_grad" : "conv2d");
  op.Input("Input", {s.n, s.c, s.h, s.w})
      .Input("Filter", {s.m, s.c, s.k, s.k})
      .Attr("strides", std::vector<int>(2, static_cast<int>(s.stride)))
      .Attr("paddings", std::vector<int>(2, static_cast<int>(s.pad)));
  if (grad) {
    op.Input("Output@GRAD", {s.n, s.m, s.oh(), s.ow()}).Output("Filter@GRAD");
    if (!s.image) op.Output("Input@GRAD");
  } else {
    op.Output("Output");
  }
  RunFixture(state, op);
  parex::cpu::SetDnnlConvMode(parex::cpu::DnnlConvMode::kWhereFaster);
  SetGflops(state, (grad ? 2 : 1) * s.flops());
}

// parex's conv2d / conv2d_grad on channels-last tensors (data_format NHWC,
// as `parex train` runs them: oneDNN's NHWC primitives).
void BM_ParexConv2dNhwc(benchmark::State& state, ConvShape s, bool grad) {
  OpFixture op(grad ? "conv2d_grad" : "conv2d");
  op.Input("Input", {s.n, s.h, s.w, s.c})
      .Input("Filter", {s.m, s.c, s.k, s.k})
      .Attr("strides", std::vector<int>(2, static_cast<int>(s.stride)))
      .Attr("paddings", std::vector<int>(2, static_cast<int>(s.pad)))
      .Attr("data_format", std::string("NHWC"));
  if (grad) {
    op.Input("Output@GRAD", {s.n, s.oh(), s.ow(), s.m}).Output("Filter@GRAD");
    if (!s.image) op.Output("Input@GRAD");
  } else {
    op.Output("Output");
  }
  RunFixture(state, op);
  SetGflops(state, (grad ? 2 : 1) * s.flops());
}

void BM_ParexPointwise(benchmark::State& state, PointwiseShape s, bool cold) {
  OpFixture op("conv2d");
  op.Input("Input", {s.n, s.hw, s.hw, s.c})
      .Input("Filter", {s.m, s.c, 1, 1})
      .Input("Bias", {s.m})
      .Output("Output")
      .Attr("data_format", std::string("NHWC"))
      .Attr("fuse_activation", std::string("relu"))
      .Attr("constant_filter", true);
  RunFixture(state, op, cold);
  SetGflops(state, 2.0 * s.n * s.hw * s.hw * s.c * s.m);
}

// The GEMMs of an im2col convolution: per image [M, CKK] x [CKK, OH*OW].
void BM_CblasIm2colGemm(benchmark::State& state, ConvShape s) {
  const int64_t ckk = s.c * s.k * s.k, cols = s.oh() * s.ow();
  std::vector<float> filter = RandomFloats(s.m * ckk, 1);
  std::vector<float> col = RandomFloats(ckk * cols, 2);
  std::vector<float> out(s.n * s.m * cols);
  for (auto _ : state) {
    for (int64_t i = 0; i < s.n; ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, cols, ckk,
                  1.0f, filter.data(), ckk, col.data(), cols, 0.0f,
                  out.data() + i * s.m * cols, cols);
    }
    benchmark::DoNotOptimize(out.data());
  }
  SetGflops(state, s.flops());
}

#ifdef PAREX_BENCH_WITH_DNNL
void BM_DnnlConv2d(benchmark::State& state, ConvShape s) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::dims src_dims{s.n, s.c, s.h, s.w};
  const memory::dims weight_dims{s.m, s.c, s.k, s.k};
  const memory::dims dst_dims{s.n, s.m, s.oh(), s.ow()};
  const memory::desc src_md(src_dims, memory::data_type::f32,
                            memory::format_tag::nchw);
  const memory::desc weight_md(weight_dims, memory::data_type::f32,
                               memory::format_tag::oihw);
  const memory::desc dst_md(dst_dims, memory::data_type::f32,
                            memory::format_tag::nchw);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      src_md, weight_md, dst_md, {s.stride, s.stride}, {s.pad, s.pad},
      {s.pad, s.pad});
  dnnl::convolution_forward::primitive_desc pd(desc, engine);
  std::vector<float> src = RandomFloats(s.n * s.c * s.h * s.w, 1);
  std::vector<float> weights = RandomFloats(s.m * s.c * s.k * s.k, 2);
  std::vector<float> dst(s.n * s.m * s.oh() * s.ow());
  memory src_mem(src_md, engine, src.data());
  memory weight_mem(weight_md, engine, weights.data());
  memory dst_mem(dst_md, engine, dst.data());
  dnnl::convolution_forward conv(pd);
  const std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_mem},
                                             {DNNL_ARG_WEIGHTS, weight_mem},
                                             {DNNL_ARG_DST, dst_mem}};
  for (auto _ : state) {
    conv.execute(stream, args);
    stream.wait();
  }
  SetGflops(state, s.flops());
}
#endif

#ifdef PAREX_BENCH_WITH_DNNL
// oneDNN's 1x1 convolution on the NHWC tensors, its filter reordered once
// into the layout it picks, bias and relu inside.
void BM_DnnlNhwcConv1x1(benchmark::State& state, PointwiseShape s, bool cold) {
  using dnnl::memory;
  using Tag = memory::format_tag;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  auto md = [](const memory::dims& d, Tag tag) {
    return memory::desc(d, memory::data_type::f32, tag);
  };
  const memory::desc src_md = md({s.n, s.c, s.hw, s.hw}, Tag::nhwc);
  const memory::desc dst_md = md({s.n, s.m, s.hw, s.hw}, Tag::nhwc);
  const memory::desc bias_md = md({s.m}, Tag::a);
  const memory::desc user_weights = md({s.m, s.c, 1, 1}, Tag::oihw);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_direct,
                                       src_md, md({s.m, s.c, 1, 1}, Tag::any),
                                       bias_md, dst_md, {1, 1}, {0, 0}, {0, 0});
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  std::vector<float> src = RandomFloats(s.n * s.c * s.hw * s.hw, 1);
  std::vector<float> weights = RandomFloats(s.m * s.c, 2);
  std::vector<float> bias = RandomFloats(s.m, 3);
  std::vector<float> dst(s.n * s.m * s.hw * s.hw);
  memory user_weight_mem(user_weights, engine, weights.data());
  memory weight_mem(pd.weights_desc(), engine);
  dnnl::reorder(user_weight_mem, weight_mem)
      .execute(stream, user_weight_mem, weight_mem);
  const std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(src_md, engine, src.data())},
      {DNNL_ARG_WEIGHTS, weight_mem},
      {DNNL_ARG_BIAS, memory(bias_md, engine, bias.data())},
      {DNNL_ARG_DST, memory(dst_md, engine, dst.data())}};
  dnnl::convolution_forward conv(pd);
  for (auto _ : state) {
    if (cold) EvictCaches(state);
    conv.execute(stream, args);
    stream.wait();
  }
  SetGflops(state, 2.0 * s.n * s.hw * s.hw * s.c * s.m);
}
#endif

// Keeps each run's real time (µs per iteration) by registered name (without
// the "/min_time:..." suffix), for the ratio table, and prints the usual
// console report.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration && !run.error_occurred) {
        micros_[run.run_name.function_name] =
            run.GetAdjustedRealTime() * 1e6 /
            benchmark::GetTimeUnitMultiplier(run.time_unit);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // 0 when the benchmark did not run (filtered out or failed).
  double Micros(const std::string& name) const {
    auto it = micros_.find(name);
    return it == micros_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, double> micros_;
};

void PrintRatio(const RecordingReporter& r, const std::string& label,
                const std::string& parex, const std::string& peer_label,
                const std::string& peer) {
  const double a = r.Micros(parex), b = r.Micros(peer);
  if (a == 0 || b == 0) return;
  std::printf("%-38s %12.1f  %-20s %12.1f  %8.2f\n", label.c_str(), a,
              peer_label.c_str(), b, a / b);
}

void RegisterAll() {
  auto add = [](const std::string& name, auto fn, auto... args) {
    benchmark::RegisterBenchmark(name.c_str(), fn, args...)
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(kMinTimeSeconds);
  };
  for (const GemmShape& s : kGemmShapes) {
    add(std::string("parex_mul/") + s.name, BM_ParexGemmOp, "mul", s);
    add(std::string("parex_matmul/") + s.name, BM_ParexGemmOp, "matmul", s);
    add(std::string("cblas_sgemm/") + s.name, BM_CblasSgemm, s);
#ifdef PAREX_BENCH_WITH_DNNL
    add(std::string("dnnl_sgemm/") + s.name, BM_DnnlSgemm, s);
#endif
  }
  for (const ConvShape& s : kConvShapes) {
    add(std::string("parex_conv2d/") + s.name, BM_ParexConv2d, s, false, true);
    add(std::string("parex_conv2d_im2col/") + s.name, BM_ParexConv2d, s, false,
        false);
    add(std::string("parex_conv2d_grad/") + s.name, BM_ParexConv2d, s, true,
        true);
    add(std::string("parex_conv2d_grad_im2col/") + s.name, BM_ParexConv2d, s,
        true, false);
    add(std::string("cblas_im2col_gemm/") + s.name, BM_CblasIm2colGemm, s);
#ifdef PAREX_BENCH_WITH_DNNL
    add(std::string("parex_conv2d_nhwc/") + s.name, BM_ParexConv2dNhwc, s,
        false);
    add(std::string("parex_conv2d_grad_nhwc/") + s.name, BM_ParexConv2dNhwc, s,
        true);
    add(std::string("dnnl_conv2d/") + s.name, BM_DnnlConv2d, s);
#endif
  }
  for (const PointwiseShape& s : kPointwiseShapes) {
    for (const bool cold : {false, true}) {
      const std::string tail = std::string(s.name) + (cold ? "_cold" : "");
      add("parex_pointwise/" + tail, BM_ParexPointwise, s, cold);
#ifdef PAREX_BENCH_WITH_DNNL
      add("dnnl_nhwc_conv1x1/" + tail, BM_DnnlNhwcConv1x1, s, cold);
#endif
    }
  }
}

void PrintTable(const RecordingReporter& r) {
  std::printf("\n%-38s %12s  %-20s %12s  %8s\n", "parex op (shape)", "parex us",
              "peer", "peer us", "ratio");
  for (const GemmShape& s : kGemmShapes) {
    const std::string shape =
        "[" + std::to_string(s.m) + "," + std::to_string(s.k) + "]x[" +
        std::to_string(s.k) + "," + std::to_string(s.n) + "]";
    for (const char* op : {"mul", "matmul"}) {
      PrintRatio(r, std::string(op) + " " + shape,
                 std::string("parex_") + op + "/" + s.name, "cblas_sgemm",
                 std::string("cblas_sgemm/") + s.name);
      PrintRatio(r, std::string(op) + " " + shape,
                 std::string("parex_") + op + "/" + s.name, "dnnl_sgemm",
                 std::string("dnnl_sgemm/") + s.name);
    }
  }
  for (const ConvShape& s : kConvShapes) {
    const std::string label = "conv2d " + std::string(s.name) + " " +
                              std::to_string(s.c) + "->" + std::to_string(s.m) +
                              " " + std::to_string(s.k) + "x" +
                              std::to_string(s.k) + " on " +
                              std::to_string(s.h) + "x" + std::to_string(s.w);
    PrintRatio(r, label, std::string("parex_conv2d/") + s.name,
               "cblas im2col GEMMs",
               std::string("cblas_im2col_gemm/") + s.name);
    PrintRatio(r, label, std::string("parex_conv2d/") + s.name,
               "oneDNN conv (nchw)", std::string("dnnl_conv2d/") + s.name);
    PrintRatio(r, label, std::string("parex_conv2d/") + s.name, "parex im2col",
               std::string("parex_conv2d_im2col/") + s.name);
    PrintRatio(r, label + " grad", std::string("parex_conv2d_grad/") + s.name,
               "parex im2col grad",
               std::string("parex_conv2d_grad_im2col/") + s.name);
  }
  for (const PointwiseShape& s : kPointwiseShapes) {
    for (const bool cold : {false, true}) {
      const std::string tail = std::string(s.name) + (cold ? "_cold" : "");
      PrintRatio(r, "conv2d NHWC 1x1 " + tail, "parex_pointwise/" + tail,
                 "oneDNN 1x1 conv", "dnnl_nhwc_conv1x1/" + tail);
    }
  }
  std::printf(
      "ratio = parex time / peer time (lower is better for parex); "
      "fp32, one thread\n");
}

}  // namespace

int main(int argc, char** argv) {
#ifdef PAREX_BENCH_WITH_DNNL
  // setenv without overwrite keeps the caller's choice; the marker argument
  // stops the re-run from re-running.
  const char* kChildFlag = "--kernel_bench_child";
  bool child = argc > 1 && std::strcmp(argv[argc - 1], kChildFlag) == 0;
  if (!child) {
    setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
    std::vector<char*> args(argv, argv + argc);
    args.push_back(const_cast<char*>(kChildFlag));
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    std::perror("kernel_bench: re-running with OMP_NUM_THREADS failed");
  } else {
    argv[--argc] = nullptr;
  }
#endif
  parex::cpu::SingleThreadedOpenBlas();  // as parex runs it
  RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  PrintTable(reporter);
  benchmark::Shutdown();
  return 0;
}
