#include "tests/support/test_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "protocol/auth.h"

namespace rs::testing {
namespace {

std::string MakeTempDir() {
  char tmpl[] = "/tmp/rs-test-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir ? dir : "/tmp";
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Polls waitpid until the child exits or the timeout passes.
int WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

size_t ProcStatusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ReducerProcess::ReducerProcess(std::vector<std::string> extra_args, uint16_t port) : dir_(MakeTempDir()) {
  std::vector<std::string> argv = {std::string(RS_BINARY_DIR) + "/server/reducerd", "--listen",
                                   "127.0.0.1:" + std::to_string(port),
                                   "--port-file", dir_ + "/port", "--io-threads", "2"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  pid_ = Spawn(argv, dir_ + "/log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string port = ReadFile(dir_ + "/port");
    if (!port.empty() && port.back() == '\n') {
      port_ = static_cast<uint16_t>(std::stoi(port));
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ReducerProcess::~ReducerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    WaitExit(pid_, std::chrono::seconds(10));
  }
}

int ReducerProcess::Terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const int code = WaitExit(pid_, timeout);
  if (code >= 0) pid_ = -1;
  return code;
}

size_t ReducerProcess::PeakRss() const { return ProcStatusField(pid_, "VmHWM"); }
size_t ReducerProcess::Rss() const { return ProcStatusField(pid_, "VmRSS"); }
std::string ReducerProcess::Log() const { return ReadFile(dir_ + "/log"); }

size_t ReducerProcess::OpenFileDescriptors() const {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

std::string WriteTokenFile(const std::string& token) {
  const std::string path = MakeTempDir() + "/token";
  std::ofstream(path) << token << "\n";
  return path;
}

void RunRanks(uint32_t world, const std::function<void(uint32_t rank)>& fn) {
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < world; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

client::ClientOptions Options(const std::vector<client::Endpoint>& reducers, const std::string& session,
                              uint32_t rank, uint32_t world, const std::string& token) {
  client::ClientOptions o;
  o.reducers = reducers;
  o.session = protocol::SessionIdFromName(session);
  o.rank = rank;
  o.world = world;
  o.job_token = token;
  o.connect_timeout = std::chrono::seconds(20);
  o.op_timeout = std::chrono::seconds(60);
  o.log = [](client::LogLevel, const std::string&) {};
  return o;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv) : out_path_(MakeTempDir() + "/out") {
  pid_ = Spawn(argv, out_path_);
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    WaitExit(pid_, std::chrono::seconds(10));
  }
}

void ChildProcess::Kill() {
  kill(pid_, SIGKILL);
  Wait(std::chrono::seconds(10));
}

int ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const int code = WaitExit(pid_, timeout);
  if (code >= 0) reaped_ = true;
  return code;
}

std::string ChildProcess::Output() const { return ReadFile(out_path_); }

bool ChildProcess::WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Output().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

namespace {

// True when the thread's /proc status says stopped ("State:\tT (stopped)").
bool ThreadStopped(const std::filesystem::path& task) {
  std::ifstream in(task / "status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("State:", 0) == 0) return line.find("T (stopped)") != std::string::npos;
  }
  return true;  // gone
}

}  // namespace

bool FreezeProcess(int pid) {
  if (kill(pid, SIGSTOP) != 0) return false;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (int i = 0; i < 5000; ++i) {
    bool all = true;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) all = all && ThreadStopped(task.path());
    if (!ec && all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace rs::testing
