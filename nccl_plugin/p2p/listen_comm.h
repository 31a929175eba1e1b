// The listening end of point-to-point setup (NCCL's listenComm) and its
// accept state machine. listen() binds a port on the device's interface and
// returns at once; each accept() call runs one step of an explicit state
// machine and returns a RecvComm only once every socket of one connection
// (the control socket and all data sockets, grouped by the connector's
// connection id) has arrived and introduced itself. Sockets that do not
// introduce themselves correctly (wrong magic, version or listen nonce: a
// stray client or a stale handle) are dropped with a warning, and so are
// sockets that stay silent past the connect timeout.
//
// Thread-safety: Accept calls must be serialised (NCCL makes them from one
// thread at a time); a mutex enforces it anyway. Never blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "nccl_plugin/opaque_object.h"
#include "nccl_plugin/p2p/wire.h"
#include "nccl_plugin/config/plugin_config.h"
#include "nccl_plugin/p2p/recv_comm.h"
#include "nccl_plugin/p2p/socket.h"

namespace rs::plugin {

class ListenComm final : public OpaqueObject {
 public:
  // Binds on `addr` (port 0) and writes the handle for the connecting peer.
  static StatusOr<std::unique_ptr<ListenComm>> Create(const SockAddr& addr, const P2pConfig& config,
                                                      P2pHandle* handle);
  static StatusOr<ListenComm*> FromOpaque(void* opaque);

  // One step; ok(nullptr) until a connection is complete.
  StatusOr<std::unique_ptr<RecvComm>> Accept();

  const SockAddr& address() const { return bound_; }

 private:
  enum class Stage { kAcceptSocket, kReadHellos, kBuildComm };

  struct Pending {  // an accepted socket that has not fully said hello yet
    Socket sock;
    SockAddr peer;
    HelloFrame hello{};
    size_t got = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  struct Group {  // the sockets of one connection, by index
    uint64_t conn_id = 0;
    SockAddr peer;
    std::vector<Socket> sockets;  // [0] control, [1..] data
    size_t arrived = 0;
  };

  ListenComm(Socket sock, SockAddr bound, const P2pConfig& config, uint64_t nonce);
  Status AcceptSocket();
  Status ReadHellos();
  void AddToGroup(Pending& p);
  StatusOr<std::unique_ptr<RecvComm>> BuildComm();

  std::mutex mu_;
  Socket sock_;
  SockAddr bound_;
  P2pConfig config_;
  uint64_t nonce_;
  Stage stage_ = Stage::kAcceptSocket;  // guarded by mu_
  std::vector<Pending> pending_;        // guarded by mu_
  std::vector<Group> groups_;           // guarded by mu_
};

}  // namespace rs::plugin
