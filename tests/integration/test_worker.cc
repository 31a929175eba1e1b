// A worker rank as its own process, for tests that kill or freeze a rank:
// joins the session, runs `--ops` float32 all-reduces, then prints
// "stalling before operation N" and sleeps (bounded) instead of running it.
// Optional arguments: the client's liveness timeout in ms, then "nofailover".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "protocol/auth.h"

int main(int argc, char** argv) {
  if (argc < 7 || argc > 9) {
    std::fprintf(stderr, "usage: rs_test_worker REDUCERS SESSION RANK WORLD TOKEN OPS [LIVENESS_MS [nofailover]]\n");
    return 2;
  }
  auto reducers = rs::client::ParseEndpoints(argv[1]);
  if (!reducers.ok()) return 2;
  rs::client::ClientOptions o;
  o.reducers = *reducers;
  o.session = rs::protocol::SessionIdFromName(argv[2]);
  o.rank = static_cast<uint32_t>(std::atoi(argv[3]));
  o.world = static_cast<uint32_t>(std::atoi(argv[4]));
  o.job_token = argv[5];
  o.connect_timeout = std::chrono::seconds(20);
  if (argc >= 8) o.liveness_timeout = std::chrono::milliseconds(std::atoi(argv[7]));
  if (argc == 9) o.failover = std::string(argv[8]) != "nofailover";
  const int ops = std::atoi(argv[6]);
  auto client = rs::client::Client::Create(o);
  if (!client.ok()) {
    std::printf("error: %s\n", client.status().ToString().c_str());
    return 1;
  }
  std::vector<float> buf(1 << 16, 1.0f);
  for (int i = 0; i < ops; ++i) {
    rs::Status st = (*client)->AllReduce(buf.data(), buf.data(), buf.size(), rs::DataType::kFloat32,
                                         rs::ReduceOp::kSum)->Wait(std::chrono::seconds(60));
    if (!st.ok()) {
      std::printf("error: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::printf("stalling before operation %d\n", ops);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return 0;
}
