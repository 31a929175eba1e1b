// The sending end of a point-to-point connection (NCCL's sendComm). Sends
// are matched with the receiver's posted receives in posting order: each
// send waits for the receiver's clear-to-send frame, which carries the posted
// size and tag. A send that is larger than the posted receive, or carries
// another tag, is rejected on both ends with the same error and no data moves,
// so the connection stays in step. Accepted payloads go inline on the
// control socket (small) or over the data sockets (large, split).
//
// Thread-safety: every public method may be called from any thread; calls
// are serialised by one mutex (NCCL calls a comm from its setup and progress
// threads). Nothing blocks on the network. The destructor joins the helper
// threads; in-flight requests are abandoned.
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

class SendComm final : public RequestOwner {
 public:
  // `control` and `data` are connected and introduced (hello sent).
  // `rto_floor`: REDUCER_TCP_RTO_MIN, as in SocketWorker::Create.
  static StatusOr<std::unique_ptr<SendComm>> Create(Socket control, std::vector<Socket> data, int threads,
                                                    std::string peer, std::chrono::milliseconds rto_floor = {});
  static StatusOr<SendComm*> FromOpaque(void* opaque);
  ~SendComm() override = default;

  // ok(nullptr) when kP2pRequestsPerComm sends are in flight: NCCL retries later.
  StatusOr<Request*> Isend(const void* data, size_t size, int tag);
  Status Test(Request* request, bool* done, size_t* size) override;

 private:
  enum State : int { kWaitingForCts = 1, kSending, kRejecting };

  SendComm(Socket control, std::string what);
  Status Progress();  // requires mu_
  Status ProgressUnchecked();
  void Start(Request* r, const ControlFrame& cts);

  std::mutex mu_;
  ControlSocket control_;         // guarded by mu_
  RequestPool pool_;               // guarded by mu_
  std::deque<Request*> waiting_;   // posted, not yet cleared to send; guarded by mu_
  std::unique_ptr<DataSockets> data_;  // last: joined first
};

}  // namespace rs::plugin
