// REDUCER_COLLNET_TRACE=<directory>: a timeline of one CollNet communicator's
// iallreduce calls, to find where CollNet's time goes under NCCL (issue 42):
// how many calls NCCL kept in flight, how long each took to be issued
// (the client's AllReduce returning), to get its first result back and to
// complete, and how long NCCL's proxy thread took to see it done (test()).
// bench/collnet_trace.py summarises the files.
//
// One CSV file per communicator and node head,
// <dir>/collnet-<host>-<pid>-<n>.csv. It is created at connect, so a
// directory that cannot be written is reported then (on stderr, report.h)
// and the job goes on without a trace; the calls are written when NCCL
// closes the communicator, so nothing is written on a call's path, or at the
// process's exit for a communicator still open then (a PyTorch script that
// never calls destroy_process_group). A process that is killed writes
// nothing. At most kMaxCalls calls are kept; the file says how many were
// left out.
//
// Thread-safety: every member may be called from any thread (one mutex per
// trace); the exit handler and a communicator's close may race, and the
// first one writes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"

namespace rs::plugin {

class CollTrace {
 public:
  static constexpr size_t kMaxCalls = size_t{1} << 20;  // 64 MiB of records at most

  struct Call {
    uint64_t bytes = 0;
    int in_flight = 0;              // this comm's calls in flight when NCCL made it, itself included
    uint32_t pool_full_before = 0;  // calls NCCL retried (all requests in flight) since the one before
    uint32_t polls = 0;             // test() calls on it, the last one included
    bool ok = false;
    Clock::time_point call;          // iallreduce entered
    Clock::time_point issued;        // the client's AllReduce returned
    Clock::time_point first_result;  // its first result bytes came in (none: failed first)
    Clock::time_point done;          // the operation completed
    Clock::time_point seen;          // test() reported it
  };

  // nullptr, with a warning on stderr, when the file cannot be created.
  // `what` names the communicator ("node 0 of 4, session ...").
  static std::unique_ptr<CollTrace> Open(const std::string& dir, const std::string& what);
  // Writes the calls, unless the exit handler did, and closes the file.
  ~CollTrace();
  CollTrace(const CollTrace&) = delete;
  CollTrace& operator=(const CollTrace&) = delete;

  // NCCL asked for a call while every request was in flight.
  void PoolFull();
  // The retries since the last call, for the call that got through.
  uint32_t TakePoolFull();
  // Ignored once the file is written.
  void Add(const Call& call);

 private:
  CollTrace(std::FILE* file, std::string path, std::string what);
  // Writes the file once; `at_exit`: the communicator was still open.
  void Write(bool at_exit);
  // The exit handler: every trace still open.
  static void WriteOpenTraces();

  const std::string path_;
  const std::string what_;
  const Clock::time_point origin_;
  const double origin_unix_us_;  // origin_ on the system clock
  std::mutex mu_;
  std::FILE* file_;              // guarded by mu_; nullptr once written
  std::vector<Call> calls_;      // guarded by mu_
  uint64_t left_out_ = 0;        // guarded by mu_
  uint32_t pool_full_ = 0;       // guarded by mu_
};

}  // namespace rs::plugin
