#include "tests/support/control_helpers.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <thread>

namespace rs::testing {
namespace {

template <typename Response, typename Request, typename Method>
grpc::Status CallWithDeadline(Method method, const Request& request, Response* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return method(&context, request, response);
}

uint16_t ReadPort(const std::string& path) {
  const std::string text = ReadFile(path);
  return text.empty() ? 0 : static_cast<uint16_t>(std::stoi(text));
}

std::string TempDir() {
  char tmpl[] = "/tmp/rs-ctl-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir ? dir : "/tmp";
}

}  // namespace

ControlledReducer::ControlledReducer(std::vector<std::string> extra_args) : dir_(TempDir()) {
  std::vector<std::string> args = {"--grpc-listen",      "127.0.0.1:0",         "--grpc-port-file",
                                   dir_ + "/grpc",        "--metrics-listen",    "127.0.0.1:0",
                                   "--metrics-port-file", dir_ + "/metrics"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  process_ = std::make_unique<ReducerProcess>(args);
  // reducerd writes the data port file last, so the others exist by now.
  if (!process_->ok()) return;
  grpc_port_ = ReadPort(dir_ + "/grpc");
  metrics_port_ = ReadPort(dir_ + "/metrics");
  auto channel = grpc::CreateChannel(grpc_target(), grpc::InsecureChannelCredentials());
  control_ = v1::ReducerControl::NewStub(channel);
  health_ = ::grpc::health::v1::Health::NewStub(channel);
}

grpc::Status ControlledReducer::GetStatus(v1::ServerStatus* out) {
  return CallWithDeadline([this](auto* c, const auto& req, auto* resp) { return control_->GetStatus(c, req, resp); },
                          v1::GetStatusRequest(), out);
}

grpc::Status ControlledReducer::ListSessions(v1::ListSessionsResponse* out) {
  return CallWithDeadline(
      [this](auto* c, const auto& req, auto* resp) { return control_->ListSessions(c, req, resp); },
      v1::ListSessionsRequest(), out);
}

grpc::Status ControlledReducer::GetSession(const std::string& id, v1::SessionInfo* out) {
  v1::GetSessionRequest request;
  request.set_id(id);
  return CallWithDeadline([this](auto* c, const auto& req, auto* resp) { return control_->GetSession(c, req, resp); },
                          request, out);
}

grpc::Status ControlledReducer::Drain(v1::DrainResponse* out) {
  return CallWithDeadline([this](auto* c, const auto& req, auto* resp) { return control_->Drain(c, req, resp); },
                          v1::DrainRequest(), out);
}

HealthStatus ControlledReducer::Health() {
  ::grpc::health::v1::HealthCheckResponse response;
  const grpc::Status st =
      CallWithDeadline([this](auto* c, const auto& req, auto* resp) { return health_->Check(c, req, resp); },
                       ::grpc::health::v1::HealthCheckRequest(), &response);
  return st.ok() ? response.status() : ::grpc::health::v1::HealthCheckResponse::UNKNOWN;
}

std::vector<std::unique_ptr<client::Client>> JoinSession(
    const std::vector<client::Endpoint>& reducers, const std::string& name, uint32_t world,
    const std::function<void(client::ClientOptions&)>& tweak) {
  std::vector<std::unique_ptr<client::Client>> clients(world);
  std::vector<Status> errors(world);
  RunRanks(world, [&](uint32_t rank) {
    client::ClientOptions o = Options(reducers, name, rank, world);
    o.streams_per_reducer = 2;  // not the automatic 1: the counts then tell streams from ranks
    if (tweak) tweak(o);
    auto c = client::Client::Create(std::move(o));
    if (c.ok()) {
      clients[rank] = std::move(c).value();
    } else {
      errors[rank] = c.status();
    }
  });
  for (uint32_t r = 0; r < world; ++r) {
    if (!errors[r].ok()) {
      ADD_FAILURE() << "rank " << r << ": " << errors[r].ToString();
      return {};
    }
  }
  return clients;
}

void RunOps(std::vector<std::unique_ptr<client::Client>>& clients, int ops, size_t count, int slow_rank,
            std::chrono::milliseconds delay) {
  const auto world = static_cast<uint32_t>(clients.size());
  RunRanks(world, [&](uint32_t rank) {
    std::vector<float> data(count);
    for (int op = 0; op < ops; ++op) {
      std::fill(data.begin(), data.end(), static_cast<float>(rank + 1));
      // The deliberate straggler: the delay is the point, not a wait for something.
      if (static_cast<int>(rank) == slow_rank) std::this_thread::sleep_for(delay);
      const Status st =
          clients[rank]->AllReduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum)->Wait();
      ASSERT_TRUE(st.ok()) << "rank " << rank << " op " << op << ": " << st.ToString();
      ASSERT_EQ(data[count - 1], static_cast<float>(world * (world + 1) / 2));
    }
  });
}

double ScrapeValue(const std::string& exposition, const std::string& series) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

CommandResult RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  ChildProcess child(argv);
  CommandResult result;
  result.code = child.Wait(timeout);
  result.output = child.Output();
  return result;
}

bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    siginfo_t info{};
    // WNOWAIT: look, but leave the child to be reaped with its exit code.
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace rs::testing
