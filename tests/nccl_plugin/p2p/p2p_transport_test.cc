// The point-to-point transport of the plugin core, in one process: the
// connect/accept state machines, concurrent use of one comm from two
// threads (as NCCL's setup and proxy threads do), and failure reporting.
#include <arpa/inet.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "nccl_plugin/p2p/connector.h"
#include "nccl_plugin/p2p/data_sockets.h"
#include "nccl_plugin/plugin.h"
#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin {
namespace {

using test::After;
using test::CheckPattern;
using test::Clock;
using test::Deadline;
using test::FillPattern;

class P2pTransport : public ::testing::Test {
 protected:
  void Make(std::map<std::string, std::string> vars = {}) {
    vars["REDUCER_SOCKET_IFNAME"] = "lo";
    Env env = Env::FromLookup([&](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
    plugin_ = Plugin::Create(env, ListSystemInterfaces());
    ASSERT_TRUE(plugin_->p2p_status().ok()) << plugin_->p2p_status().ToString();
  }

  void Connect(std::unique_ptr<SendComm>* send, std::unique_ptr<RecvComm>* recv) {
    alignas(8) char handle[128] = {};
    StatusOr<std::unique_ptr<ListenComm>> listen = plugin_->Listen(0, handle);
    ASSERT_TRUE(listen.ok()) << listen.status().ToString();
    const Deadline deadline = After(std::chrono::seconds(20));
    while (*send == nullptr || *recv == nullptr) {
      ASSERT_LT(Clock::now(), deadline) << "connect/accept did not finish";
      if (*send == nullptr) {
        StatusOr<std::unique_ptr<SendComm>> s = plugin_->Connect(0, handle);
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        *send = std::move(s).value();
      }
      if (*recv == nullptr) {
        StatusOr<std::unique_ptr<RecvComm>> r = (*listen)->Accept();
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        *recv = std::move(r).value();
      }
    }
  }

  static Status Wait(Request* r, size_t* size, Deadline deadline = After(std::chrono::seconds(20))) {
    while (true) {
      bool done = false;
      RS_RETURN_IF_ERROR(r->owner->Test(r, &done, size));
      if (done) return Status::Ok();
      if (Clock::now() > deadline) return Status(Code::kTimeout, "test deadline passed");
      sched_yield();
    }
  }

  std::unique_ptr<Plugin> plugin_;
};

TEST_F(P2pTransport, AcceptWithoutPeerReturnsNoComm) {
  Make();
  alignas(8) char handle[128] = {};
  StatusOr<std::unique_ptr<ListenComm>> listen = plugin_->Listen(0, handle);
  ASSERT_TRUE(listen.ok());
  for (int i = 0; i < 100; ++i) {
    StatusOr<std::unique_ptr<RecvComm>> r = (*listen)->Accept();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, nullptr);
  }
}

TEST_F(P2pTransport, ConnectKeepsItsStateInTheHandle) {
  Make();
  alignas(8) char handle[128] = {};
  StatusOr<std::unique_ptr<ListenComm>> listen = plugin_->Listen(0, handle);
  ASSERT_TRUE(listen.ok());
  P2pHandle h;
  std::memcpy(&h, handle, sizeof(h));
  EXPECT_EQ(h.magic, kHandleMagic);
  EXPECT_EQ(h.connect_stage, 0u);
  StatusOr<std::unique_ptr<SendComm>> first = plugin_->Connect(0, handle);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, nullptr);  // one step per call: not ready after the first
  std::memcpy(&h, handle, sizeof(h));
  EXPECT_NE(h.connect_stage, 0u);
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;
  const Deadline deadline = After(std::chrono::seconds(20));
  while (send == nullptr || recv == nullptr) {
    ASSERT_LT(Clock::now(), deadline);
    if (!send) send = std::move(plugin_->Connect(0, handle)).value();
    if (!recv) recv = std::move((*listen)->Accept()).value();
  }
  std::memcpy(&h, handle, sizeof(h));
  EXPECT_EQ(h.connect_stage, 0u);
}

TEST_F(P2pTransport, ConnectToAVanishedListenerFailsWithinTheTimeout) {
  Make({{"REDUCER_CONNECT_TIMEOUT", "300ms"}});
  alignas(8) char handle[128] = {};
  {
    StatusOr<std::unique_ptr<ListenComm>> listen = plugin_->Listen(0, handle);
    ASSERT_TRUE(listen.ok());
  }
  const Deadline deadline = After(std::chrono::seconds(10));
  Status result;
  while (result.ok()) {
    ASSERT_LT(Clock::now(), deadline) << "connect neither failed nor timed out";
    StatusOr<std::unique_ptr<SendComm>> s = plugin_->Connect(0, handle);
    ASSERT_TRUE(!s.ok() || *s == nullptr) << "connected to a closed listener";
    if (!s.ok()) result = s.status();
  }
  EXPECT_EQ(result.code(), Code::kTimeout) << result.ToString();
  EXPECT_NE(result.message().find("(REDUCER_CONNECT_TIMEOUT)"), std::string::npos) << result.message();
}

TEST_F(P2pTransport, ForeignHandleIsRejected) {
  Make();
  alignas(8) char handle[128] = {};
  StatusOr<std::unique_ptr<SendComm>> s = plugin_->Connect(0, handle);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(plugin_->Connect(1, handle).ok());  // no such device
}

TEST_F(P2pTransport, StrayConnectionIsDroppedAndRealOnesStillWork) {
  Make();
  alignas(8) char handle[128] = {};
  StatusOr<std::unique_ptr<ListenComm>> listen = plugin_->Listen(0, handle);
  ASSERT_TRUE(listen.ok());
  int stray = ::socket(AF_INET, SOCK_STREAM, 0);
  const SockAddr& addr = (*listen)->address();
  ASSERT_EQ(::connect(stray, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len), 0);
  char junk[sizeof(HelloFrame)];
  std::memset(junk, 'x', sizeof(junk));
  ASSERT_EQ(::send(stray, junk, sizeof(junk), 0), static_cast<ssize_t>(sizeof(junk)));
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;
  const Deadline deadline = After(std::chrono::seconds(20));
  while (send == nullptr || recv == nullptr) {
    ASSERT_LT(Clock::now(), deadline);
    if (!send) send = std::move(plugin_->Connect(0, handle)).value();
    if (!recv) recv = std::move((*listen)->Accept()).value();
  }
  char probe;
  // The listener closed the stray socket: we read EOF.
  EXPECT_EQ(::recv(stray, &probe, 1, 0), 0);
  ::close(stray);
}

// NCCL's setup thread and proxy thread call the same comm concurrently:
// one thread posts, another tests, a third receives.
TEST_F(P2pTransport, TwoThreadsOnOneComm) {
  Make();
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;
  ASSERT_NO_FATAL_FAILURE(Connect(&send, &recv));
  constexpr int kMessages = 300;
  auto size_of = [](int i) { return static_cast<size_t>((i * 7919) % 200'000); };
  std::vector<std::vector<uint8_t>> out(kMessages);
  for (int i = 0; i < kMessages; ++i) {
    out[i].resize(size_of(i));
    FillPattern(out[i].data(), out[i].size(), 0, i);
  }
  std::mutex mu;
  std::deque<Request*> posted;
  std::atomic<bool> failed{false};
  const Deadline deadline = After(std::chrono::seconds(60));
  std::thread poster([&] {
    for (int i = 0; i < kMessages && !failed;) {
      StatusOr<Request*> r = send->Isend(out[i].data(), out[i].size(), 5);
      if (!r.ok() || Clock::now() > deadline) {
        failed = true;
        break;
      }
      if (*r == nullptr) {
        sched_yield();  // pool full: the tester frees slots
        continue;
      }
      std::lock_guard<std::mutex> lock(mu);
      posted.push_back(*r);
      ++i;
    }
  });
  std::thread tester([&] {
    for (int done = 0; done < kMessages && !failed;) {
      Request* r = nullptr;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!posted.empty()) r = posted.front();
      }
      if (r == nullptr) {
        if (Clock::now() > deadline) failed = true;
        sched_yield();
        continue;
      }
      size_t size = 0;
      if (!Wait(r, &size, deadline).ok() || size != size_of(done)) {
        failed = true;
        break;
      }
      std::lock_guard<std::mutex> lock(mu);
      posted.pop_front();
      ++done;
    }
  });
  std::vector<uint8_t> in(200'000);
  for (int i = 0; i < kMessages && !failed; ++i) {
    StatusOr<Request*> r = recv->Irecv(in.data(), in.size(), 5);
    ASSERT_TRUE(r.ok() && *r != nullptr);
    size_t size = 0;
    Status st = Wait(*r, &size, deadline);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(size, size_of(i));
    ASSERT_LT(CheckPattern(in.data(), size, 0, i), 0) << "message " << i;
  }
  poster.join();
  tester.join();
  EXPECT_FALSE(failed);
}

TEST_F(P2pTransport, PeerCloseFailsOutstandingAndLaterRequests) {
  Make();
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;
  ASSERT_NO_FATAL_FAILURE(Connect(&send, &recv));
  std::vector<uint8_t> in(1 << 20);
  StatusOr<Request*> r = recv->Irecv(in.data(), in.size(), 0);
  ASSERT_TRUE(r.ok() && *r != nullptr);
  send.reset();
  size_t size = 0;
  Status st = Wait(*r, &size);
  EXPECT_EQ(st.code(), Code::kPeerFailed) << st.ToString();
  EXPECT_NE(st.message().find("recv comm from"), std::string::npos) << st.ToString();
  StatusOr<Request*> later = recv->Irecv(in.data(), in.size(), 0);
  EXPECT_FALSE(later.ok());
}

TEST_F(P2pTransport, ACompletedRequestCannotBeTestedAgain) {
  Make();
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;
  ASSERT_NO_FATAL_FAILURE(Connect(&send, &recv));
  char in[8], out[8] = "abcdefg";
  Request* rr = *recv->Irecv(in, sizeof(in), 0);
  Request* sr = *send->Isend(out, sizeof(out), 0);
  size_t size = 0;
  ASSERT_TRUE(Wait(sr, &size).ok());
  ASSERT_TRUE(Wait(rr, &size).ok());
  EXPECT_STREQ(in, "abcdefg");
  bool done = false;
  EXPECT_EQ(sr->owner->Test(sr, &done, &size).code(), Code::kInternal);
  EXPECT_FALSE(Request::FromOpaque(nullptr).ok());
  EXPECT_FALSE(SendComm::FromOpaque(OpaqueObject::ToOpaque(recv.get())).ok());  // a recv comm is no send comm
  EXPECT_TRUE(RecvComm::FromOpaque(OpaqueObject::ToOpaque(recv.get())).ok());
}

TEST(DataSockets, ChunkCountBothEndsAgreeOn) {
  EXPECT_EQ(DataSockets::ChunkCount(0, 4), 0u);
  EXPECT_EQ(DataSockets::ChunkCount(1, 4), 1u);
  EXPECT_EQ(DataSockets::ChunkCount(DataSockets::kMinChunk, 4), 1u);
  EXPECT_EQ(DataSockets::ChunkCount(DataSockets::kMinChunk + 1, 4), 2u);
  EXPECT_EQ(DataSockets::ChunkCount((1 << 20) + 3, 4), 4u);
  EXPECT_EQ(DataSockets::ChunkCount((1 << 20) + 3, 64), 17u);
}

}  // namespace
}  // namespace rs::plugin
