// A job that ends well ends its sessions well: ranks that close their
// clients one by one after their last operation fail nobody, and every
// reducer logs the session as ended, not failed. A rank that goes on after
// another has left learns which rank left, when it starts an operation.
#include <gtest/gtest.h>

#include <mutex>
#include <regex>

#include "protocol/auth.h"
#include "tests/support/control_helpers.h"

namespace rs::testing {
namespace {

using std::chrono::seconds;

// What every rank's client logged at WARN and above.
struct Logs {
  std::mutex mu;
  std::vector<std::string> lines;
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return lines;
  }
};

std::function<void(client::ClientOptions&)> Recording(const std::shared_ptr<Logs>& logs) {
  return [logs](client::ClientOptions& o) {
    o.log = [logs](client::LogLevel level, const std::string& message) {
      if (level < client::LogLevel::kWarn) return;
      std::lock_guard<std::mutex> lock(logs->mu);
      logs->lines.push_back(message);
    };
  };
}

TEST(SessionEndTest, RanksThatCloseOneByOneEndTheSessionOnEveryReducer) {
  ReducerProcess a, b;
  ASSERT_TRUE(a.ok() && b.ok()) << a.Log() << b.Log();
  auto logs = std::make_shared<Logs>();
  auto clients = JoinSession({a.endpoint(), b.endpoint()}, "ends-well", 4, Recording(logs));
  ASSERT_EQ(clients.size(), 4u);
  RunOps(clients, 5, 100'000);
  // One by one, the others still connected (and idle) each time.
  for (auto& c : clients) {
    EXPECT_TRUE(c->health().ok()) << "rank " << c->rank() << ": " << c->health().ToString();
    c.reset();
  }
  for (const std::string& line : logs->Take()) ADD_FAILURE() << "a rank logged: " << line;
  const std::string id = protocol::SessionIdToString(protocol::SessionIdFromName("ends-well"));
  for (ReducerProcess* r : {&a, &b}) {
    ASSERT_EQ(r->Terminate(seconds(20)), 0) << r->Log();
    const std::string log = r->Log();
    EXPECT_TRUE(std::regex_search(log, std::regex("info reducerd: session " + id + " ended: 5 operations"))) << log;
    EXPECT_EQ(log.find("failed"), std::string::npos) << log;
    EXPECT_EQ(log.find("without goodbye"), std::string::npos) << log;
  }
}

TEST(SessionEndTest, ARankThatStartsAnOperationAfterAnotherLeftIsToldWhichOne) {
  ReducerProcess reducer;
  ASSERT_TRUE(reducer.ok()) << reducer.Log();
  auto clients = JoinSession({reducer.endpoint()}, "one-left", 2);
  ASSERT_EQ(clients.size(), 2u);
  RunOps(clients, 2, 1000);
  clients[0].reset();  // rank 0 is done
  EXPECT_TRUE(clients[1]->health().ok()) << "told before it needed to know: " << clients[1]->health().ToString();
  std::vector<float> v(1000, 1.0f);
  const Status st = clients[1]->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                        ->Wait(seconds(30));
  EXPECT_EQ(st.code(), Code::kPeerFailed) << st.ToString();
  EXPECT_NE(st.message().find("rank 0 left the session (it closed its client after its last operation) before "
                              "operation 2"),
            std::string::npos)
      << st.message();
  clients[1].reset();
  ASSERT_EQ(reducer.Terminate(seconds(20)), 0) << reducer.Log();
  // The reducer saw a failure, the rank that went on, not the one that left.
  EXPECT_NE(reducer.Log().find("rank 0 left the session"), std::string::npos) << reducer.Log();
}

}  // namespace
}  // namespace rs::testing
