#include "nccl_plugin/collnet/collnet_trace.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <set>

#include "nccl_plugin/report/report.h"

namespace rs::plugin {
namespace {

std::atomic<int> next_trace{0};

// The traces of communicators still open, for the exit handler. Both are
// constructed before the handler is registered, so that it runs before they
// are destroyed (at exit, or when NCCL unloads the library).
std::mutex& OpenMutex() {
  static std::mutex mu;
  return mu;
}
std::set<CollTrace*>& OpenTraces() {
  static std::set<CollTrace*> open;
  return open;
}

// Microseconds from `origin`, one decimal; "" for a time that never came.
std::string Micros(Clock::time_point t, Clock::time_point origin) {
  if (t == Clock::time_point{}) return "";
  const double us = std::chrono::duration<double, std::micro>(t - origin).count();
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", us);
  return text;
}

}  // namespace

static_assert(sizeof(CollTrace::Call) <= 64, "kMaxCalls x 64 bytes is the memory the docs promise");

std::unique_ptr<CollTrace> CollTrace::Open(const std::string& dir, const std::string& what) {
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  const std::string path = dir + "/collnet-" + host + "-" + std::to_string(getpid()) + "-" +
                           std::to_string(next_trace.fetch_add(1)) + ".csv";
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    ReportWarn("REDUCER_COLLNET_TRACE: cannot create " + path + " (" + std::strerror(errno) +
               "); this communicator runs without a trace");
    return nullptr;
  }
  ReportInfo("CollNet trace of " + what + ": " + path + ", written when NCCL closes the communicator or the " +
             "process exits");
  std::unique_ptr<CollTrace> trace(new CollTrace(file, path, what));
  std::mutex& mu = OpenMutex();
  std::set<CollTrace*>& open = OpenTraces();
  static const bool handler = std::atexit(&CollTrace::WriteOpenTraces) == 0;
  (void)handler;  // without it, only a communicator NCCL closes is written
  std::lock_guard<std::mutex> lock(mu);
  open.insert(trace.get());
  return trace;
}

CollTrace::CollTrace(std::FILE* file, std::string path, std::string what)
    : path_(std::move(path)),
      what_(std::move(what)),
      origin_(Clock::now()),
      origin_unix_us_(std::chrono::duration<double, std::micro>(std::chrono::system_clock::now().time_since_epoch())
                          .count()),
      file_(file) {}

CollTrace::~CollTrace() {
  {
    std::lock_guard<std::mutex> lock(OpenMutex());
    OpenTraces().erase(this);
  }
  Write(false);
}

void CollTrace::WriteOpenTraces() {
  std::lock_guard<std::mutex> lock(OpenMutex());
  for (CollTrace* trace : OpenTraces()) trace->Write(true);
}

void CollTrace::PoolFull() {
  std::lock_guard<std::mutex> lock(mu_);
  ++pool_full_;
}

uint32_t CollTrace::TakePoolFull() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t n = pool_full_;
  pool_full_ = 0;
  return n;
}

void CollTrace::Add(const Call& call) {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return;
  if (calls_.size() >= kMaxCalls) {
    ++left_out_;
    return;
  }
  calls_.push_back(call);
}

void CollTrace::Write(bool at_exit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) return;
  std::fprintf(file_, "# reduction server CollNet trace: %s\n", what_.c_str());
  std::fprintf(file_, "# times in microseconds since the communicator connected; %zu calls, %" PRIu64
                      " left out (at most %zu kept)%s\n",
               calls_.size(), left_out_, kMaxCalls, at_exit ? "; written at exit, the communicator still open" : "");
  // The same instant on the system clock, so that the nodes' files can be
  // laid side by side (on one host, or hosts whose clocks agree).
  std::fprintf(file_, "# connected at %.1f microseconds since the Unix epoch\n", origin_unix_us_);
  std::fprintf(file_, "call_us,issued_us,first_result_us,done_us,seen_us,bytes,in_flight,pool_full_before,polls,ok\n");
  for (const Call& c : calls_) {
    std::fprintf(file_, "%s,%s,%s,%s,%s,%" PRIu64 ",%d,%u,%u,%d\n", Micros(c.call, origin_).c_str(),
                 Micros(c.issued, origin_).c_str(), Micros(c.first_result, origin_).c_str(),
                 Micros(c.done, origin_).c_str(), Micros(c.seen, origin_).c_str(), c.bytes, c.in_flight,
                 c.pool_full_before, c.polls, c.ok ? 1 : 0);
  }
  const bool failed = std::ferror(file_) != 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  const size_t written = calls_.size();
  calls_ = {};
  if (!closed || failed) {
    ReportWarn("REDUCER_COLLNET_TRACE: writing " + path_ + " failed (" + std::strerror(errno) +
               "); the trace is incomplete");
    return;
  }
  ReportInfo("CollNet trace of " + what_ + ": " + std::to_string(written) + " calls written to " + path_ +
             (at_exit ? " at exit (the communicator was still open)" : ""));
}

}  // namespace rs::plugin
