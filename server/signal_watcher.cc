#include "server/signal_watcher.h"

#include <pthread.h>
#include <signal.h>

namespace rs::server {
namespace {

// Sent by the destructor to wake the watcher; ignored otherwise.
constexpr int kWakeSignal = SIGUSR1;

sigset_t WatchedSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, kWakeSignal);
  return set;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t set = WatchedSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWatcher::SignalWatcher(StopRequest& stop) : stop_(stop), thread_([this] { Run(); }) {}

SignalWatcher::~SignalWatcher() {
  quit_ = true;
  pthread_kill(thread_.native_handle(), kWakeSignal);
  thread_.join();
}

void SignalWatcher::Run() {
  const sigset_t set = WatchedSignals();
  while (!quit_) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig == SIGTERM || sig == SIGINT) stop_.Request(sig == SIGTERM ? "SIGTERM received" : "SIGINT received");
  }
}

}  // namespace rs::server
