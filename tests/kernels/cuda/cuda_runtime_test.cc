// Device-free tests of parex_kernels_cuda (error macros, NCCL linkage, device
// discovery without a driver, registration) and, with a device, streams,
// events and the allocator.
#include "tests/kernels/cuda/cuda_test_util.h"

namespace parex {
namespace {

using namespace cuda_test;  // NOLINT: test helpers
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// Tests that need no device.

Status FailingCudaCall() {
  PAREX_CUDA_RETURN_IF_ERROR(cudaErrorInvalidValue);
  return Status::Ok();
}
Status FailingCublasCall() {
  PAREX_CUBLAS_RETURN_IF_ERROR(CUBLAS_STATUS_NOT_INITIALIZED);
  return Status::Ok();
}
Status FailingNcclCall() {
  PAREX_NCCL_RETURN_IF_ERROR(ncclInvalidArgument);
  return Status::Ok();
}
StatusOr<int> SucceedingCalls() {
  PAREX_CUDA_RETURN_IF_ERROR(cudaSuccess);
  PAREX_CUBLAS_RETURN_IF_ERROR(CUBLAS_STATUS_SUCCESS);
  PAREX_NCCL_RETURN_IF_ERROR(ncclSuccess);
  return 42;
}

TEST(CudaStatusTest, MacrosKeepExpressionAndLibraryMessage) {
  Status cuda = FailingCudaCall();
  EXPECT_EQ(cuda.code(), StatusCode::kInternal);
  EXPECT_THAT(cuda.message(), HasSubstr("cudaErrorInvalidValue"));
  EXPECT_THAT(cuda.message(),
              HasSubstr(cudaGetErrorString(cudaErrorInvalidValue)));
  EXPECT_THAT(cuda.message(), HasSubstr("'cudaErrorInvalidValue'"));
  EXPECT_THAT(cuda.message(), HasSubstr("cuda_runtime_test.cc:"));

  Status cublas = FailingCublasCall();
  EXPECT_EQ(cublas.code(), StatusCode::kInternal);
  EXPECT_THAT(cublas.message(), HasSubstr("CUBLAS_STATUS_NOT_INITIALIZED"));
  EXPECT_THAT(cublas.message(),
              HasSubstr(cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED)));

  Status nccl = FailingNcclCall();
  EXPECT_EQ(nccl.code(), StatusCode::kInternal);
  EXPECT_THAT(nccl.message(), HasSubstr("NCCL error"));
  EXPECT_THAT(nccl.message(),
              HasSubstr(ncclGetErrorString(ncclInvalidArgument)));
  EXPECT_THAT(nccl.message(), HasSubstr("'ncclInvalidArgument'"));

  StatusOr<int> ok = SucceedingCalls();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, 42);
}

TEST(CudaStatusTest, NoDeviceIsAFailedPrecondition) {
  Status s = CudaErrorStatus(cudaErrorNoDevice, "cudaSetDevice(0)", "x.cc", 1);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("'cudaSetDevice(0)' at x.cc:1"));
}

TEST(CudaInfoTest, NcclIsLinked) {
  const std::string version = NcclVersionString();
  EXPECT_EQ(version.rfind("2.", 0), 0u) << version;
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
}

TEST(CudaInfoTest, DeviceCountNeverFails) {
  const int count = CudaDeviceCount();
  EXPECT_GE(count, 0);
  EXPECT_EQ(CudaDeviceCount(), count);  // and asking again is harmless
}

TEST(CudaInfoTest, RegisterCudaDevicesShowsTheDevicesToPlaceLists) {
  RegisterCudaDevices();
  RegisterCudaDevices();  // a second call changes nothing
  ASSERT_TRUE(HasCuda());
  const int count = CudaDeviceCount();
  EXPECT_EQ(VisibleCudaDevices(), count);
  StatusOr<std::vector<Place>> all = ParseMachinePlaceList("cuda:all");
  if (count == 0) {
    ASSERT_FALSE(all.ok());
    EXPECT_EQ(all.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(all.status().message(), HasSubstr("0 CUDA devices visible"));
  } else {
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    EXPECT_EQ(all->size(), static_cast<size_t>(count));
  }
  Status missing = CheckPlacesVisible({Place::CUDA(count)});
  EXPECT_EQ(missing.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.message(),
              HasSubstr("place cuda:" + std::to_string(count)));
  SetCudaDeviceCounter(nullptr);
  EXPECT_FALSE(HasCuda());
}

TEST(CudaDeviceContextTest, CreationWithoutDeviceIsAnErrorNamingThePlace) {
  const int count = CudaDeviceCount();
  auto context = CudaDeviceContext::Create(Place::CUDA(0));
  if (count == 0) {
    ASSERT_FALSE(context.ok());
    EXPECT_EQ(context.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(context.status().message(), HasSubstr("cuda:0"));
  } else {
    EXPECT_TRUE(context.ok()) << context.status().ToString();
  }
  auto missing = CudaDeviceContext::Create(Place::CUDA(count));
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("cuda:" + std::to_string(count)));
  auto negative = CudaDeviceContext::Create(Place::CUDA(-1));
  EXPECT_FALSE(negative.ok());
}

TEST(CudaDeviceContextTest, CpuPlaceIsRejected) {
  auto context = CudaDeviceContext::Create(Place::CPU());
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(context.status().message(), HasSubstr("cpu:0"));
}

TEST(CudaEventTest, UnrecordedEventIsComplete) {
  CudaEvent event;
  EXPECT_TRUE(event.Query());
  EXPECT_TRUE(event.Synchronize().ok());
  EXPECT_EQ(event.get(), nullptr);
}

const char* const kCudaOps[] = {"elementwise_add",
                                "elementwise_sub",
                                "elementwise_mul",
                                "elementwise_div",
                                "relu",
                                "sigmoid",
                                "tanh",
                                "scale",
                                "reduce_sum",
                                "reduce_mean",
                                "mean",
                                "sum",
                                "mul",
                                "matmul",
                                "matmul_v2",
                                "softmax",
                                "softmax_grad",
                                "softmax_with_cross_entropy",
                                "softmax_with_cross_entropy_grad",
                                "relu_grad",
                                "sigmoid_grad",
                                "tanh_grad",
                                "mean_grad",
                                "mul_grad",
                                "elementwise_add_grad",
                                "elementwise_sub_grad",
                                "elementwise_mul_grad",
                                "elementwise_div_grad",
                                "elementwise_max_grad",
                                "elementwise_min_grad",
                                "top_k",
                                "accuracy",
                                "sgd",
                                "momentum",
                                "adam",
                                "conv2d",
                                "conv2d_grad",
                                "depthwise_conv2d",
                                "depthwise_conv2d_grad",
                                "pool2d",
                                "pool2d_grad",
                                "batch_norm",
                                "batch_norm_grad",
                                "dropout",
                                "dropout_grad",
                                "top_k_v2",
                                "reshape2",
                                "reshape2_grad",
                                "transpose2",
                                "transpose2_grad",
                                "matmul_v2_grad",
                                "reduce_sum_grad",
                                "reduce_mean_grad",
                                "gelu",
                                "gelu_grad",
                                "layer_norm",
                                "layer_norm_grad",
                                "lookup_table_v2",
                                "lookup_table_v2_grad"};

TEST(CudaKernelsTest, RegistersEveryOpForFp32AndFp64OnCudaOnly) {
  KernelRegistry registry;
  RegisterCudaKernels(&registry);
  RegisterCudaKernels(&registry);  // a second call changes nothing
  for (const char* op : kCudaOps) {
    for (DType dtype : {DType::kFP32, DType::kFP64}) {
      EXPECT_TRUE(registry.Has({op, Place::Kind::kCUDA, dtype}))
          << op << " " << DTypeName(dtype);
      EXPECT_FALSE(registry.Has({op, Place::Kind::kCPU, dtype})) << op;
    }
  }
  EXPECT_EQ(registry.Keys().size(), 2 * std::size(kCudaOps));
}

TEST(CudaKernelsTest, KernelOnACpuContextIsAnErrorNotACrash) {
  KernelRegistry registry;
  RegisterCudaKernels(&registry);
  auto relu = registry.Find({"relu", Place::Kind::kCUDA, DType::kFP32});
  ASSERT_TRUE(relu.ok());
  Program program;
  Block& block = program.global_block();
  OpDesc* op = block.AppendOp("relu");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  Scope scope;
  *scope.Var("x")->GetMutableTensor() = MakeTensor<float>({2}, {-1.0f, 1.0f});
  CpuDeviceContext cpu;
  KernelContext ctx(*op, &cpu);
  ASSERT_TRUE(BindVariables(*op, &scope, &ctx).ok());
  Status status = (*relu)(ctx);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("CudaDeviceContext"));
  EXPECT_THAT(status.message(), HasSubstr("relu"));
}

// ---- Streams, events and the allocator ----

TEST(CudaDeviceContextTest, CopiesRoundTrip) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto context = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  CudaDeviceContext& ctx = **context;
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  Tensor a(DType::kFP32, {1000}, ctx.place());
  Tensor b(DType::kFP32, {1000}, ctx.place());
  ASSERT_TRUE(ctx.CopyFromHost(a.raw_data(), host.data(), a.bytes()).ok());
  ASSERT_TRUE(ctx.CopyOnDevice(b.raw_data(), a.raw_data(), a.bytes()).ok());
  std::vector<float> back(1000, -1.0f);
  ASSERT_TRUE(ctx.CopyToHost(back.data(), b.raw_data(), b.bytes()).ok());
  ASSERT_TRUE(ctx.Synchronize().ok());
  EXPECT_EQ(back, host);
  EXPECT_TRUE(ctx.CopyToHost(back.data(), b.raw_data(), 0).ok());
}

// SumToAll, the in-device all-reduce's one pass: every output holds the
// inputs' sum in rank order (bit for bit the host's float additions), for
// the unrolled counts and the general one, vectorised (aligned) or not
// (offset by one element), in place (outputs = inputs) or not, with a
// length that leaves a tail past the vectors.
TEST(CudaDeviceContextTest, SumToAllAddsInRankOrderIntoEveryOutput) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto context = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  CudaDeviceContext& ctx = **context;
  const int64_t n = 1003;
  for (int count : {1, 2, 3, 4, 5}) {
    for (int64_t offset : {0, 1}) {
      for (bool in_place : {true, false}) {
        std::vector<std::vector<float>> host(count);
        std::vector<float> want(n, 0.0f);
        std::vector<Tensor> in, out;
        std::vector<const void*> ins;
        std::vector<void*> outs;
        for (int k = 0; k < count; ++k) {
          host[k].resize(n + 1);
          for (int64_t i = 0; i <= n; ++i) {
            host[k][i] = 1.0f / static_cast<float>(3 + i + 7 * k) +
                         static_cast<float>(k) * 1e4f;
          }
          in.emplace_back(DType::kFP32, Dims{n + 1}, ctx.place());
          ASSERT_TRUE(ctx.CopyFromHost(in.back().raw_data(), host[k].data(),
                                       in.back().bytes())
                          .ok());
          ins.push_back(in.back().data<float>() + offset);
          if (in_place) {
            outs.push_back(in.back().data<float>() + offset);
          } else {
            out.emplace_back(DType::kFP32, Dims{n + 1}, ctx.place());
            outs.push_back(out.back().data<float>() + offset);
          }
        }
        for (int64_t i = 0; i < n; ++i) {
          float sum = host[0][i + offset];
          for (int k = 1; k < count; ++k) sum += host[k][i + offset];
          want[i] = sum;
        }
        ASSERT_TRUE(ctx.SumToAll(ins, outs, DType::kFP32, n).ok());
        for (int k = 0; k < count; ++k) {
          std::vector<float> got(n);
          ASSERT_TRUE(
              ctx.CopyToHost(got.data(), outs[k], n * sizeof(float)).ok());
          ASSERT_TRUE(ctx.Synchronize().ok());
          EXPECT_EQ(got, want)
              << count << " buffers, offset " << offset
              << (in_place ? ", in place" : "") << ", output " << k;
        }
      }
    }
  }
  EXPECT_EQ(ctx.SumToAll({}, {}, DType::kInt32, 1).code(),
            StatusCode::kUnimplemented);
}

TEST(CudaDeviceContextTest, EventsOrderTwoStreams) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto producer_or = CudaDeviceContext::Create(Place::CUDA(0));
  auto consumer_or = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(producer_or.ok()) << producer_or.status().ToString();
  ASSERT_TRUE(consumer_or.ok()) << consumer_or.status().ToString();
  CudaDeviceContext& producer = **producer_or;
  CudaDeviceContext& consumer = **consumer_or;
  ASSERT_NE(producer.stream(), consumer.stream());

  // Long work on the producer: 32 passes of x = x + 1 over 16M floats.
  const int64_t n = int64_t{1} << 24;
  const int kPasses = 32;
  Tensor x(DType::kFP32, {n}, producer.place());
  ASSERT_TRUE(producer.Activate().ok());
  ASSERT_EQ(cudaMemsetAsync(x.raw_data(), 0, x.bytes(), producer.stream()),
            cudaSuccess);
  for (int pass = 0; pass < kPasses; ++pass) {
    ASSERT_EQ(LaunchScale<float>(x.data<float>(), x.data<float>(), n, 1.0f,
                                 1.0f, true, nullptr, producer.stream()),
              cudaSuccess);
  }
  std::unique_ptr<Event> done = producer.CreateEvent();
  ASSERT_TRUE(producer.RecordEvent(done.get()).ok());

  // The consumer's copy is queued behind the event, not behind the host.
  ASSERT_TRUE(consumer.WaitEvent(done.get()).ok());
  std::vector<float> host(n, -1.0f);
  ASSERT_TRUE(consumer.CopyToHost(host.data(), x.raw_data(), x.bytes()).ok());
  ASSERT_TRUE(consumer.Synchronize().ok());
  EXPECT_TRUE(done->Query());
  EXPECT_EQ(std::count(host.begin(), host.end(), static_cast<float>(kPasses)),
            n);

  ASSERT_TRUE(done->Synchronize().ok());
  EXPECT_TRUE(done->Query());
  // Events of a CPU context are complete; waiting on one is a no-op.
  CpuDeviceContext cpu;
  std::unique_ptr<Event> cpu_event = cpu.CreateEvent();
  EXPECT_TRUE(consumer.WaitEvent(cpu_event.get()).ok());
  EXPECT_EQ(consumer.RecordEvent(cpu_event.get()).code(),
            StatusCode::kInvalidArgument);
  // An event never recorded does not block.
  std::unique_ptr<Event> unused = consumer.CreateEvent();
  EXPECT_TRUE(consumer.WaitEvent(unused.get()).ok());
  EXPECT_TRUE(unused->Query());
}

TEST(CudaDeviceContextTest, QueryTurnsTrueAfterTheWork) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  auto context = CudaDeviceContext::Create(Place::CUDA(0));
  ASSERT_TRUE(context.ok());
  CudaDeviceContext& ctx = **context;
  Tensor x(DType::kFP64, {1 << 22}, ctx.place());
  ASSERT_TRUE(ctx.Activate().ok());
  for (int pass = 0; pass < 8; ++pass) {
    ASSERT_EQ(LaunchUnary<double>(UnaryOp::kTanh, x.data<double>(),
                                  x.data<double>(), x.numel(), ctx.stream()),
              cudaSuccess);
  }
  std::unique_ptr<Event> event = ctx.CreateEvent();
  ASSERT_TRUE(ctx.RecordEvent(event.get()).ok());
  ASSERT_TRUE(event->Synchronize().ok());
  EXPECT_TRUE(event->Query());
  // Recording again reuses the event.
  ASSERT_TRUE(ctx.RecordEvent(event.get()).ok());
  ASSERT_TRUE(ctx.Synchronize().ok());
  EXPECT_TRUE(event->Query());
}

TEST(CudaAllocatorTest, StatsTrackDeviceBlocksAndReuse) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  Cuda0();  // registers the CUDA allocator
  Allocator* allocator = GetAllocator(Place::CUDA(0));
  EXPECT_EQ(allocator->place(), Place::CUDA(0));
  const size_t kBytes = size_t{1} << 20;
  const AllocatorStats before = allocator->stats();
  {
    Tensor t(DType::kFP32, {256, 1024}, Place::CUDA(0));
    const AllocatorStats during = allocator->stats();
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + kBytes);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_EQ(during.num_allocs, before.num_allocs + 1);
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, t.raw_data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    EXPECT_EQ(attributes.device, 0);
  }
  const AllocatorStats freed = allocator->stats();
  EXPECT_EQ(freed.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(freed.bytes_cached, kBytes);
  {
    Tensor again(DType::kFP32, {256, 1024}, Place::CUDA(0));  // from the cache
    EXPECT_EQ(allocator->stats().num_system_allocs, freed.num_system_allocs);
  }
  allocator->ReleaseCache();
  EXPECT_EQ(allocator->stats().bytes_cached, 0u);
  EXPECT_EQ(allocator->Allocate(0), nullptr);
}

}  // namespace
}  // namespace parex
