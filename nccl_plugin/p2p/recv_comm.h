// The receiving end of a point-to-point connection (NCCL's recvComm). Each
// irecv sends a clear-to-send frame with its size and tag; the sender
// answers, in the same order, with the data (inline on the control socket or
// over the data sockets) or with a rejection that both ends report as the
// same error. `test` reports the size actually sent, which may be smaller
// than the posted size. maxRecvs is 1: one buffer per irecv.
//
// Thread-safety: as SendComm: any thread, serialised by one mutex, never
// blocking on the network; the destructor joins the helper threads.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_plugin/p2p/control_socket.h"
#include "nccl_plugin/p2p/data_sockets.h"
#include "nccl_plugin/p2p/request.h"
#include "nccl_plugin/p2p/socket.h"

namespace rs::plugin {

class RecvComm final : public RequestOwner {
 public:
  static StatusOr<std::unique_ptr<RecvComm>> Create(Socket control, std::vector<Socket> data, int threads,
                                                    std::string peer);
  static StatusOr<RecvComm*> FromOpaque(void* opaque);
  ~RecvComm() override = default;

  // ok(nullptr) when kP2pRequestsPerComm receives are in flight: NCCL retries later.
  StatusOr<Request*> Irecv(void* data, size_t size, int tag);
  Status Test(Request* request, bool* done, size_t* size) override;

 private:
  enum State : int { kWaitingForData = 1, kReadingInline, kReceiving, kComplete, kRejected };

  RecvComm(Socket control, std::string what);
  Status Progress();  // requires mu_
  Status ProgressUnchecked();
  Status OnFrame(Request* r, const ControlFrame& f);

  std::mutex mu_;
  ControlSocket control_;          // guarded by mu_
  RequestPool pool_;                // guarded by mu_
  std::deque<Request*> waiting_;    // posted, no answer from the sender yet; guarded by mu_
  Request* reading_ = nullptr;      // inline payload being read; guarded by mu_
  std::unique_ptr<DataSockets> data_;  // last: joined first
};

}  // namespace rs::plugin
