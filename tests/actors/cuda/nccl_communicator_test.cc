// NcclCommunicator on the GPUs of this machine (skipped where no GPU is
// visible; the cases of two ranks need two GPUs, since NCCL refuses two
// ranks on one): sums against the host's, broadcast and reduce writing
// what the contract says, the refusals (two places on one GPU, a sum of
// bools, all-gather) naming what they refuse, and an interrupted
// communicator failing every later call with the reason.
#include "actors/comm/nccl_communicator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/comm/device_communicators.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/device_context.h"
#include "kernels/kernel_registry.h"

namespace parex {
namespace {

class NcclCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
    RegisterCudaKernels(&KernelRegistry::Global());
  }

  // One place per GPU for the first `n` GPUs, each with a stream.
  void MakePlaces(int n) {
    for (int i = 0; i < n; ++i) {
      places_.push_back(Place::CUDA(i));
      auto c = CreateDeviceContext(places_.back());
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      contexts_.push_back(std::move(c).value());
      streams_.push_back(contexts_.back().get());
    }
  }

  // A tensor on place `p` holding `values`.
  Tensor OnPlace(int p, const std::vector<float>& values) {
    Tensor t;
    EXPECT_TRUE(t.TryAllocate(DType::kFP32,
                              Dims{static_cast<int64_t>(values.size())},
                              places_[p])
                    .ok());
    EXPECT_TRUE(streams_[p]
                    ->CopyFromHost(t.raw_data(), values.data(),
                                   values.size() * sizeof(float))
                    .ok());
    EXPECT_TRUE(streams_[p]->Synchronize().ok());
    return t;
  }

  std::vector<float> OnHost(int p, const Tensor& t) {
    std::vector<float> v(t.numel());
    for (DeviceContext* s : streams_) EXPECT_TRUE(s->Synchronize().ok());
    EXPECT_TRUE(
        streams_[p]->CopyToHost(v.data(), t.raw_data(), t.bytes()).ok());
    EXPECT_TRUE(streams_[p]->Synchronize().ok());
    return v;
  }

  std::vector<Place> places_;
  std::vector<std::unique_ptr<DeviceContext>> contexts_;
  std::vector<DeviceContext*> streams_;
};

TEST_F(NcclCommunicatorTest, OneRankKeepsItsValuesAndRefusesWhatItCannotDo) {
  MakePlaces(1);
  auto comm = NcclCommunicator::Create(places_, streams_);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_STREQ((*comm)->backend(), "nccl");
  EXPECT_TRUE((*comm)->asynchronous());
  Tensor a = OnPlace(0, {1.5f, -2.0f, 3.25f});
  PlaceTensors tensors = {&a};
  ASSERT_TRUE((*comm)->AllReduce("w@GRAD", tensors).ok());
  ASSERT_TRUE((*comm)->Broadcast("w", tensors, 0).ok());
  ASSERT_TRUE((*comm)->Reduce("w@GRAD", tensors, 0).ok());
  EXPECT_EQ(OnHost(0, a), (std::vector<float>{1.5f, -2.0f, 3.25f}));
  EXPECT_TRUE((*comm)->Health().ok());

  Tensor flags;
  ASSERT_TRUE(flags.TryAllocate(DType::kBool, Dims{4}, places_[0]).ok());
  PlaceTensors bools = {&flags};
  Status sum = (*comm)->AllReduce("mask", bools);
  EXPECT_FALSE(sum.ok());
  EXPECT_NE(sum.message().find("'mask'"), std::string::npos) << sum.ToString();
  EXPECT_TRUE((*comm)->Broadcast("mask", bools, 0).ok());  // bytes move
  Status root = (*comm)->Reduce("w@GRAD", tensors, 1);
  EXPECT_FALSE(root.ok());
  Status gather = (*comm)->AllGather("emb@GRAD", tensors, tensors);
  EXPECT_EQ(gather.code(), StatusCode::kUnimplemented);
  EXPECT_NE(gather.message().find("'emb@GRAD'"), std::string::npos);

  (*comm)->Interrupt(Aborted("peer node 2 lost"));
  Status after = (*comm)->AllReduce("w@GRAD", tensors);
  EXPECT_FALSE(after.ok());
  EXPECT_NE(after.message().find("peer node 2 lost"), std::string::npos)
      << after.ToString();
  EXPECT_FALSE((*comm)->Health().ok());
}

TEST_F(NcclCommunicatorTest, TwoPlacesOnOneGpuAreRefusedNamingTheGpu) {
  MakePlaces(1);
  auto second = CreateDeviceContext(Place::CUDA(0, 1));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto comm = NcclCommunicator::Create({Place::CUDA(0), Place::CUDA(0, 1)},
                                       {streams_[0], second->get()});
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("GPU 0"), std::string::npos)
      << comm.status().ToString();
}

TEST_F(NcclCommunicatorTest, RegisteredAsTheCudaDeviceCommunicator) {
  RegisterNcclCommunicator();
  EXPECT_TRUE(HasDeviceCommunicator(Place::Kind::kCUDA));
  MakePlaces(1);
  auto comm = CreateDeviceCommunicator(places_, streams_);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_STREQ((*comm)->backend(), "nccl");
}

TEST_F(NcclCommunicatorTest, TwoGpusSumBroadcastAndReduceAsTheContractSays) {
  if (CudaDeviceCount() < 2) {
    GTEST_SKIP() << "one CUDA device visible: NCCL needs a GPU per rank";
  }
  MakePlaces(2);
  auto comm = NcclCommunicator::Create(places_, streams_);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  const std::vector<float> x0 = {1.0f, 2.0f, -3.0f, 0.5f};
  const std::vector<float> x1 = {10.0f, -20.0f, 30.0f, 0.25f};
  std::vector<float> sum(x0.size());
  for (size_t i = 0; i < x0.size(); ++i) sum[i] = x0[i] + x1[i];

  Tensor a0 = OnPlace(0, x0), a1 = OnPlace(1, x1);
  ASSERT_TRUE((*comm)->AllReduce("g", PlaceTensors{&a0, &a1}).ok());
  EXPECT_EQ(OnHost(0, a0), sum);
  EXPECT_EQ(OnHost(1, a1), sum);

  Tensor r0 = OnPlace(0, x0), r1 = OnPlace(1, x1);
  ASSERT_TRUE((*comm)->Reduce("g", PlaceTensors{&r0, &r1}, 1).ok());
  EXPECT_EQ(OnHost(1, r1), sum);
  EXPECT_EQ(OnHost(0, r0), x0);

  Tensor b0 = OnPlace(0, x0), b1 = OnPlace(1, x1);
  ASSERT_TRUE((*comm)->Broadcast("w", PlaceTensors{&b0, &b1}, 1).ok());
  EXPECT_EQ(OnHost(0, b0), x1);

  // A fused bucket: two groups in one NCCL group call.
  Tensor c0 = OnPlace(0, x0), c1 = OnPlace(1, x1);
  Tensor d0 = OnPlace(0, x1), d1 = OnPlace(1, x0);
  std::vector<PlaceTensors> bucket = {{&c0, &c1}, {&d0, &d1}};
  ASSERT_TRUE((*comm)->AllReduce("bucket", bucket).ok());
  EXPECT_EQ(OnHost(1, c1), sum);
  EXPECT_EQ(OnHost(0, d0), sum);
  EXPECT_TRUE((*comm)->Health().ok());
}

}  // namespace
}  // namespace parex
