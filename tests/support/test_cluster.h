// Test harness for multi-process tests: starts real reducerd processes on
// 127.0.0.1 (port 0), runs ranks as threads with the real client library or
// as separate worker processes, and cleans everything up. Every wait is
// bounded so a broken build fails a test instead of hanging it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "client/client.h"

namespace rs::testing {

// A reducerd child process. Killed (SIGKILL) on destruction unless stopped.
class ReducerProcess {
 public:
  // `port` 0 picks a free one; another reuses a given port (a restarted pod).
  explicit ReducerProcess(std::vector<std::string> extra_args = {}, uint16_t port = 0);
  ~ReducerProcess();
  ReducerProcess(const ReducerProcess&) = delete;
  ReducerProcess& operator=(const ReducerProcess&) = delete;

  bool ok() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  client::Endpoint endpoint() const { return {"127.0.0.1", port_}; }
  // Sends SIGTERM and waits (bounded) for the exit status; -1 on timeout.
  int Terminate(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Peak resident set size (VmHWM) and current (VmRSS), in bytes.
  size_t PeakRss() const;
  size_t Rss() const;
  // Open file descriptors (entries of /proc/PID/fd); 0 if it cannot be read.
  size_t OpenFileDescriptors() const;
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string dir_;
};

// Writes a job token file and returns its path.
std::string WriteTokenFile(const std::string& token);

// Sends SIGSTOP and waits (at most 5 s) until every thread of `pid` is
// stopped: kill() returns before the process stops, and a reducer that is
// still finishing an operation then is not yet frozen. False if it never was.
bool FreezeProcess(int pid);

// Runs fn(rank) on `world` threads and joins them.
void RunRanks(uint32_t world, const std::function<void(uint32_t rank)>& fn);

// Client options for a rank of `world` on the given reducers, quick timeouts.
client::ClientOptions Options(const std::vector<client::Endpoint>& reducers, const std::string& session,
                              uint32_t rank, uint32_t world, const std::string& token = "");

// A child process running `argv`; stdout+stderr go to a file.
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }
  void Kill();
  // Exit code, or -1 if it did not exit within `timeout`.
  int Wait(std::chrono::milliseconds timeout);
  std::string Output() const;
  // Waits (bounded) until the output contains `text`.
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  pid_t pid_ = -1;
  std::string out_path_;
  bool reaped_ = false;
};

std::string ReadFile(const std::string& path);

}  // namespace rs::testing
