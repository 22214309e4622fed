#include "kernels/visible_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

namespace parex {
namespace {

using ::testing::HasSubstr;

int TwoDevices() { return 2; }
int NoDevice() { return 0; }

// Installs a counter for one test and takes it away after.
class VisibleDevicesTest : public ::testing::Test {
 protected:
  ~VisibleDevicesTest() override {
    SetCudaDeviceCounter(nullptr);
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
};

TEST_F(VisibleDevicesTest, WithoutACounterThisParexHasNoCuda) {
  SetCudaDeviceCounter(nullptr);
  EXPECT_FALSE(HasCuda());
  EXPECT_EQ(VisibleCudaDevices(), 0);
  Status s = CheckPlacesVisible({Place::CUDA(0)});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("place cuda:0: "));
  EXPECT_THAT(s.message(), HasSubstr("built without CUDA"));
  StatusOr<std::vector<Place>> all = ParseMachinePlaceList("cuda:all");
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(all.status().message(), HasSubstr("'cuda:all'"));
  EXPECT_THAT(all.status().message(), HasSubstr("built without CUDA"));
  EXPECT_TRUE(CheckPlacesVisible({Place::CPU(0), Place::Sim(3)}).ok());
}

TEST_F(VisibleDevicesTest, PlacesBeyondTheVisibleDevicesAreNamed) {
  SetCudaDeviceCounter(&TwoDevices);
  setenv("CUDA_VISIBLE_DEVICES", "3,5", 1);
  EXPECT_TRUE(HasCuda());
  EXPECT_EQ(VisibleCudaDevices(), 2);
  EXPECT_TRUE(CheckPlacesVisible({Place::CUDA(0), Place::CUDA(1, 3)}).ok());
  Status s = CheckPlacesVisible({Place::CUDA(1), Place::CUDA(2, 1)});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("place cuda:2.1: no such CUDA device"));
  EXPECT_THAT(s.message(), HasSubstr("2 CUDA devices visible"));
  EXPECT_THAT(s.message(), HasSubstr("CUDA_VISIBLE_DEVICES='3,5'"));
  EXPECT_THAT(s.message(), HasSubstr("cuda:0 is the first of them"));

  StatusOr<std::vector<Place>> all = ParseMachinePlaceList("cuda:allx2");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, (std::vector<Place>{Place::CUDA(0), Place::CUDA(0, 1),
                                      Place::CUDA(1), Place::CUDA(1, 1)}));
}

TEST_F(VisibleDevicesTest, NoDeviceVisibleSaysSoAndWhatHidesThem) {
  SetCudaDeviceCounter(&NoDevice);
  unsetenv("CUDA_VISIBLE_DEVICES");
  Status unset = CheckPlacesVisible({Place::CUDA(0)});
  EXPECT_THAT(unset.message(), HasSubstr("0 CUDA devices visible"));
  EXPECT_THAT(unset.message(), HasSubstr("CUDA_VISIBLE_DEVICES not set"));
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  StatusOr<std::vector<Place>> all = ParseMachinePlaceList("cuda:all");
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(all.status().message(), HasSubstr("CUDA_VISIBLE_DEVICES=''"));
}

TEST_F(VisibleDevicesTest, CpuAllIsEveryUsableCore) {
  const int cores = UsableCpuCores();
  EXPECT_GE(cores, 1);
  StatusOr<std::vector<Place>> all = ParseMachinePlaceList("cpu:all");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->size(), static_cast<size_t>(cores));
  EXPECT_EQ(all->back(), Place::CPU(cores - 1));
}

}  // namespace
}  // namespace parex
