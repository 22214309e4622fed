// The registry of communicators between devices: none registered is a
// clear Unimplemented naming the places; a registered factory gets the
// places and streams it is asked for, and a later one replaces it.
#include "actors/comm/device_communicators.h"

#include <gtest/gtest.h>

#include "actors/comm/in_process_communicator.h"

namespace parex {
namespace {

TEST(DeviceCommunicatorsTest, NoneRegisteredIsUnimplementedNamingThePlaces) {
  // No backend registers for simulated places.
  ASSERT_FALSE(HasDeviceCommunicator(Place::Kind::kSim));
  auto comm = CreateDeviceCommunicator({Place::Sim(0), Place::Sim(1)}, {});
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(comm.status().message().find("sim:0"), std::string::npos)
      << comm.status().ToString();
  EXPECT_FALSE(CreateDeviceCommunicator({}, {}).ok());
}

TEST(DeviceCommunicatorsTest, TheRegisteredFactoryMakesTheCommunicator) {
  std::vector<Place> asked;
  size_t streams_asked = 99;
  auto factory = [&](const std::vector<Place>& places,
                     const std::vector<DeviceContext*>& streams)
      -> StatusOr<std::shared_ptr<Communicator>> {
    asked = places;
    streams_asked = streams.size();
    // A stand-in backend: the CPU places of the same ids.
    std::vector<Place> cpus;
    for (const Place& p : places) cpus.push_back(Place::CPU(p.id));
    return std::shared_ptr<Communicator>(
        std::make_shared<InProcessCommunicator>(cpus));
  };
  RegisterDeviceCommunicator(Place::Kind::kSim, factory);
  EXPECT_TRUE(HasDeviceCommunicator(Place::Kind::kSim));
  auto comm = CreateDeviceCommunicator({Place::Sim(0), Place::Sim(1)}, {});
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->world_size(), 2);
  EXPECT_EQ(asked, (std::vector<Place>{Place::Sim(0), Place::Sim(1)}));
  EXPECT_EQ(streams_asked, 0u);

  RegisterDeviceCommunicator(
      Place::Kind::kSim,
      [](const std::vector<Place>& places, const std::vector<DeviceContext*>&)
          -> StatusOr<std::shared_ptr<Communicator>> {
        return FailedPrecondition("second factory for " + places[0].ToString());
      });
  auto second = CreateDeviceCommunicator({Place::Sim(0)}, {});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("second factory for sim:0"),
            std::string::npos);
}

}  // namespace
}  // namespace parex
