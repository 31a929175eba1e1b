// The rendezvous on 127.0.0.1: ranks as threads. Every rank gets rank 0's
// blob, or every rank that is there learns why not.
#include "trainer/net/rendezvous.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace rs::trainer {
namespace {

using std::chrono::milliseconds;

RendezvousBlob Blob(uint8_t seed) {
  RendezvousBlob b;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(seed + i);
  return b;
}

class RendezvousTest : public ::testing::Test {
 protected:
  // Rank 0 serves on a free port; ranks 1.. join with their settings (rank
  // r uses settings[r], ranks listed in `absent` never start).
  void Run(uint32_t world, std::vector<std::string> settings, std::vector<uint32_t> absent = {},
           milliseconds timeout = milliseconds(20'000), std::vector<uint32_t> ranks_claimed = {}) {
    auto server = RendezvousServer::Listen("127.0.0.1", 0);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    results_.assign(world, Status(Code::kInternal, "did not run"));
    blobs_.assign(world, RendezvousBlob{});
    std::vector<std::thread> threads;
    for (uint32_t r = 1; r < world; ++r) {
      if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
      threads.emplace_back([&, r] {
        RendezvousConfig c{"127.0.0.1", (*server)->port(), ranks_claimed.empty() ? r : ranks_claimed[r],
                           world,       settings[r],       timeout};
        auto blob = RendezvousJoin(c);
        results_[r] = blob.ok() ? Status::Ok() : blob.status();
        if (blob.ok()) blobs_[r] = *blob;
      });
    }
    results_[0] = (*server)->Serve(world, settings[0], Blob(7), timeout);
    for (auto& t : threads) t.join();
  }

  std::vector<Status> results_;
  std::vector<RendezvousBlob> blobs_;
};

TEST_F(RendezvousTest, EveryRankGetsRankZerosBlob) {
  Run(5, std::vector<std::string>(5, "model=a\nbatch=8\n"));
  for (uint32_t r = 0; r < 5; ++r) ASSERT_TRUE(results_[r].ok()) << "rank " << r << ": " << results_[r].ToString();
  for (uint32_t r = 1; r < 5; ++r) EXPECT_EQ(blobs_[r], Blob(7));
}

TEST_F(RendezvousTest, OtherSettingsFailEveryRankNamingRankAndSetting) {
  std::vector<std::string> settings(4, "model=a\nbatch=8\n");
  settings[2] = "model=a\nbatch=16\n";
  Run(4, settings);
  for (uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(results_[r].code(), r == 0 ? Code::kMismatch : Code::kPeerFailed) << results_[r].ToString();
    EXPECT_NE(results_[r].message().find("rank 2 (127.0.0.1) runs with other settings than rank 0: 'batch=16' "
                                         "where rank 0 has 'batch=8'"),
              std::string::npos)
        << "rank " << r << ": " << results_[r].message();
  }
}

TEST_F(RendezvousTest, AMissingRankIsNamedOnEveryRankThatCame) {
  Run(4, std::vector<std::string>(4, "s"), /*absent=*/{3}, milliseconds(500));
  for (uint32_t r : {0u, 1u, 2u}) {
    EXPECT_NE(results_[r].message().find("rank 3 never reached the rendezvous at 127.0.0.1:"), std::string::npos)
        << "rank " << r << ": " << results_[r].ToString();
  }
  EXPECT_EQ(results_[0].code(), Code::kTimeout);
}

TEST_F(RendezvousTest, ARankClaimedTwiceIsRefused) {
  Run(3, std::vector<std::string>(3, "s"), {}, milliseconds(20'000), /*ranks_claimed=*/{0, 1, 1});
  EXPECT_EQ(results_[0].code(), Code::kMismatch);
  EXPECT_NE(results_[0].message().find("rank 1 was claimed twice"), std::string::npos) << results_[0].message();
}

TEST_F(RendezvousTest, AnotherWorldSizeIsRefused) {
  auto server = RendezvousServer::Listen("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  Status joined;
  std::thread t([&] {
    joined = RendezvousJoin({"127.0.0.1", (*server)->port(), 1, 3, "s", milliseconds(20'000)}).status();
  });
  const Status served = (*server)->Serve(2, "s", Blob(1), milliseconds(20'000));
  t.join();
  EXPECT_NE(served.message().find("claiming rank 1 has WORLD_SIZE 3, rank 0 has 2"), std::string::npos)
      << served.message();
  EXPECT_NE(joined.message().find("has WORLD_SIZE 3, rank 0 has 2"), std::string::npos) << joined.message();
}

TEST_F(RendezvousTest, StrangersAreIgnored) {
  auto server = RendezvousServer::Listen("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  // Someone probing the port (an HTTP client, a scanner) before the real rank.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons((*server)->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const char http[] = "GET / HTTP/1.1\r\n\r\n";
  ASSERT_GT(send(fd, http, sizeof(http) - 1, 0), 0);
  StatusOr<RendezvousBlob> blob = Status(Code::kInternal, "not run");
  std::thread t([&] { blob = RendezvousJoin({"127.0.0.1", (*server)->port(), 1, 2, "s", milliseconds(20'000)}); });
  EXPECT_TRUE((*server)->Serve(2, "s", Blob(3), milliseconds(20'000)).ok());
  t.join();
  ASSERT_TRUE(blob.ok()) << blob.status().ToString();
  EXPECT_EQ(*blob, Blob(3));
  close(fd);
}

TEST_F(RendezvousTest, NoRankZeroIsReportedWithinTheTimeout) {
  // A port nobody listens on: bind one, then close it.
  auto server = RendezvousServer::Listen("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  const uint16_t port = (*server)->port();
  server->reset();
  RendezvousConfig c{"127.0.0.1", port, 1, 2, "s", milliseconds(200)};
  auto blob = RendezvousJoin(c);
  EXPECT_EQ(blob.status().code(), Code::kTimeout);
  EXPECT_NE(blob.status().message().find("could not reach rank 0 at 127.0.0.1:"), std::string::npos)
      << blob.status().message();
}

TEST_F(RendezvousTest, OneRankNeedsNoRendezvous) {
  auto blob = Rendezvous({"nowhere.invalid", 1, 0, 1, "s", milliseconds(10)}, Blob(9));
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(*blob, Blob(9));
}

}  // namespace
}  // namespace rs::trainer
