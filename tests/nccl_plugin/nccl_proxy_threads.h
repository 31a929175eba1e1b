// NCCL's two proxy threads, for the stand-in's rank processes. NCCL 2.28
// calls a network plugin from three threads per communicator: the thread that
// creates and destroys the communicator (init, devices, getProperties,
// reduceSupport, finalize), the proxy service thread (listen, connect,
// accept, closeListen and regMr while connections are set up, deregMr and
// close* when they are freed: proxy.cc ncclProxyService, transport/net.cc,
// transport/coll_net.cc), and the proxy progress thread (isend, irecv,
// iallreduce and test: ncclProxyProgress). A plugin that keeps state per
// thread, or whose comm is not safe to hand from one thread to another,
// passes a single-threaded stand-in and fails under NCCL; these threads make
// the stand-in fail too.
//
// The caller's thread plays NCCL's main thread: it hands each step to a
// worker and waits for it, never longer than the deadline.
//
// Thread-safety: one thread (the caller's) calls every member.
#pragma once

#include <functional>
#include <memory>

#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {

class ProxyThreads {
 public:
  explicit ProxyThreads(Deadline deadline);
  // Stops the progress thread, then the proxy thread (NCCL's order at
  // destroy). Joins both: only call once every task has returned.
  ~ProxyThreads();
  ProxyThreads(const ProxyThreads&) = delete;
  ProxyThreads& operator=(const ProxyThreads&) = delete;

  // Runs `task` on the proxy service thread / the progress thread and waits
  // until it returns. false: the deadline passed first and the task may
  // still run, so the caller must end the process (it cannot join).
  [[nodiscard]] bool OnProxy(const std::function<void()>& task);
  [[nodiscard]] bool OnProgress(const std::function<void()>& task);

  // Joins the progress thread: NCCL stops it before the proxy thread frees
  // any connection (ncclProxyProgressDestroy in ncclProxyService).
  void StopProgress();

 private:
  class Worker;
  std::unique_ptr<Worker> proxy_;
  std::unique_ptr<Worker> progress_;
};

}  // namespace rs::plugin::test
