#include "tests/nccl_plugin/nccl_proxy_threads.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace rs::plugin::test {

// One thread that runs the tasks handed to it, one at a time. It gives up
// waiting for work at the deadline too, so no thread outlives a stuck test.
class ProxyThreads::Worker {
 public:
  explicit Worker(Deadline deadline) : deadline_(deadline), thread_([this] { Loop(); }) {}

  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  bool Run(const std::function<void()>& task) {
    std::unique_lock<std::mutex> lock(mu_);
    task_ = &task;
    done_ = false;
    cv_.notify_all();
    return cv_.wait_until(lock, deadline_, [&] { return done_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (cv_.wait_until(lock, deadline_, [&] { return stop_ || task_ != nullptr; }) && !stop_) {
      const std::function<void()>* task = task_;
      lock.unlock();
      (*task)();
      lock.lock();
      task_ = nullptr;
      done_ = true;
      cv_.notify_all();
    }
  }

  const Deadline deadline_;
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void()>* task_ = nullptr;  // guarded by mu_
  bool done_ = false;                            // guarded by mu_
  bool stop_ = false;                            // guarded by mu_
  std::thread thread_;  // last: starts once the fields above exist
};

ProxyThreads::ProxyThreads(Deadline deadline)
    : proxy_(std::make_unique<Worker>(deadline)), progress_(std::make_unique<Worker>(deadline)) {}

ProxyThreads::~ProxyThreads() {
  progress_.reset();
  proxy_.reset();
}

bool ProxyThreads::OnProxy(const std::function<void()>& task) { return proxy_->Run(task); }

bool ProxyThreads::OnProgress(const std::function<void()>& task) {
  return progress_ != nullptr && progress_->Run(task);
}

void ProxyThreads::StopProgress() { progress_.reset(); }

}  // namespace rs::plugin::test
