// Turns SIGTERM/SIGINT into a StopRequest, on a thread of its own, so that
// main() can wait for "a signal or a Drain call" in one place.
//
// Threading: construct in main() after blocking the stop signals in every
// thread (BlockStopSignals, before any thread starts); the destructor stops
// and joins the watcher thread.
#pragma once

#include <atomic>
#include <thread>

#include "server/control/stop_request.h"

namespace rs::server {

// Blocks SIGTERM, SIGINT (and the watcher's own wake-up signal) in the
// calling thread and every thread it starts later.
void BlockStopSignals();

class SignalWatcher {
 public:
  explicit SignalWatcher(StopRequest& stop);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  void Run();

  StopRequest& stop_;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

}  // namespace rs::server
