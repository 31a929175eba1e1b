// The connecting end of point-to-point setup: an explicit, non-blocking
// state machine that NCCL drives by calling connect() again and again with
// the same handle buffer (the Connector lives in the handle's connect_stage
// field between calls). Each call runs one step: open a socket, see whether
// its connect finished, send its hello; after the control socket and every
// data socket are connected and introduced it builds the SendComm. Refused
// connections are retried until the connect timeout, which bounds the whole
// procedure.
//
// Thread-safety: one Connector is driven by one thread at a time (NCCL calls
// connect for one handle from one thread). Never blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "nccl_plugin/p2p/wire.h"
#include "nccl_plugin/config/plugin_config.h"
#include "nccl_plugin/p2p/send_comm.h"
#include "nccl_plugin/p2p/socket.h"

namespace rs::plugin {

class Connector {
 public:
  // Validates the handle written by the peer's listen().
  static StatusOr<std::unique_ptr<Connector>> Create(const P2pHandle& handle, const P2pConfig& config);

  // One step; ok(nullptr) until the comm is ready.
  StatusOr<std::unique_ptr<SendComm>> Step();

 private:
  enum class Stage { kOpenSocket, kAwaitConnect, kSendHello, kBuildComm };

  Connector(const SockAddr& peer, uint64_t listen_nonce, const P2pConfig& config);
  Status OpenSocket();
  Status AwaitConnect();
  Status SendHello();

  SockAddr peer_;
  uint64_t listen_nonce_;
  uint64_t conn_id_;
  P2pConfig config_;
  std::chrono::steady_clock::time_point deadline_;

  Stage stage_ = Stage::kOpenSocket;
  size_t index_ = 0;  // socket being set up: 0 control, 1.. data
  Socket current_;
  HelloFrame hello_{};
  size_t hello_sent_ = 0;
  Socket control_;
  std::vector<Socket> data_;
};

}  // namespace rs::plugin
