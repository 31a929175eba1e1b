// A small TCP rendezvous of our own on MASTER_ADDR:MASTER_PORT, run once at
// start-up. Rank 0 listens; every other rank connects and says which rank it
// is, the world size it expects and the settings it runs with. Once all
// ranks are there and agree, rank 0 sends each the same 128-byte blob it
// chose: NCCL's unique id for the GPU backend, a fresh session id for the
// CPU backend. Bounded by a timeout; a rank that never shows up, a rank
// claimed twice or out of range, another world size or other settings end
// the rendezvous on every rank that is there, with an error naming the
// cause. Connections that do not speak this protocol are dropped and
// ignored.
//
// Threading: blocking calls on the caller's thread; no threads of its own.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace rs::trainer {

using RendezvousBlob = std::array<uint8_t, 128>;

struct RendezvousConfig {
  std::string host;  // rank 0's address, as every rank knows it
  uint16_t port = 0;
  uint32_t rank = 0;
  uint32_t world = 1;
  std::string settings;  // what the ranks must agree on, "name=value" lines
  std::chrono::milliseconds timeout{120'000};
};

// Rank 0's side.
class RendezvousServer {
 public:
  // Binds host:port (port 0 picks a free one); where host is not an address
  // of this machine (a load balancer, say) it binds every address instead.
  static StatusOr<std::unique_ptr<RendezvousServer>> Listen(const std::string& host, uint16_t port);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  uint16_t port() const { return port_; }
  // Waits for ranks 1..world-1, checks them against `settings`, and hands
  // each `blob`; or tells every rank there why not.
  Status Serve(uint32_t world, const std::string& settings, const RendezvousBlob& blob,
               std::chrono::milliseconds timeout);

 private:
  RendezvousServer(int fd, uint16_t port, std::string where) : fd_(fd), port_(port), where_(std::move(where)) {}
  int fd_;
  uint16_t port_;
  std::string where_;
};

// The other ranks' side: rank 0's blob, or the error rank 0 reported.
StatusOr<RendezvousBlob> RendezvousJoin(const RendezvousConfig& config);

// Rank 0 serves with `blob`; the others join. Returns the blob every rank
// then holds.
StatusOr<RendezvousBlob> Rendezvous(const RendezvousConfig& config, const RendezvousBlob& blob);

}  // namespace rs::trainer
