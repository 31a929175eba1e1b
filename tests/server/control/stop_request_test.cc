// The switch from serving to draining: first request wins, waiters wake.
#include "server/control/stop_request.h"

#include <gtest/gtest.h>

#include <thread>

namespace rs::server {
namespace {

TEST(StopRequestTest, TheFirstRequestWinsAndNamesTheReason) {
  StopRequest stop;
  EXPECT_FALSE(stop.requested());
  EXPECT_TRUE(stop.Request("SIGTERM received"));
  EXPECT_FALSE(stop.Request("drain requested over gRPC"));
  EXPECT_TRUE(stop.requested());
  EXPECT_EQ(stop.reason(), "SIGTERM received");
}

TEST(StopRequestTest, WaitReturnsOnceRequestedFromAnotherThread) {
  StopRequest stop;
  std::thread requester([&] { stop.Request("drain"); });
  EXPECT_EQ(stop.Wait(), "drain");
  requester.join();
}

}  // namespace
}  // namespace rs::server
