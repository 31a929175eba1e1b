// Hostile clients for the integration tests: many TCP clients from chosen
// loopback source addresses (127.0.0.2, 127.0.0.3, ...) that misbehave
// against a reducer in the ways a port scanner, a broken job or an attacker
// would, each in a loop until stopped, all on one I/O thread. They record what
// the reducer answered (ERROR codes) and how the connections ended.
//
// Threading: Start() and Stop() from the test's thread; counters are atomics
// readable at any time.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <asio.hpp>

#include "common/status.h"

namespace rs::testing {

enum class Hostility {
  kGarbage,         // 64 random bytes, then read until the reducer closes
  kSilent,          // connect and send nothing
  kPartialHeader,   // 8 bytes of a frame header, then nothing
  kHelloNoAuth,     // a valid HELLO, read the CHALLENGE, never AUTH
  kHugeWorld,       // HELLO (+ AUTH) for 16384 ranks x 64 streams
  kPendingSession,  // HELLO + AUTH (no token) for a fresh 256-rank session no other rank joins
  kFlood,           // connect and reset at once
};
inline constexpr size_t kHostilities = 7;

struct AttackPlan {
  uint16_t port = 0;                 // the reducer on 127.0.0.1
  std::vector<std::string> sources;  // loopback source addresses
  struct Loop {
    Hostility kind;
    int per_source;  // concurrent loops of this kind from each source
    int max_total;   // connections of this kind in all; 0: until stopped
  };
  std::vector<Loop> loops;
};

class HostileClients {
 public:
  explicit HostileClients(AttackPlan plan);
  ~HostileClients();  // stops
  HostileClients(const HostileClients&) = delete;
  HostileClients& operator=(const HostileClients&) = delete;

  void Start();
  void Stop();

  // Connections made, per kind.
  uint64_t connections(Hostility kind) const { return connections_[Index(kind)].load(); }
  uint64_t total_connections() const;
  // ERROR frames received, per code (all kinds together).
  uint64_t errors(Code code) const { return errors_[static_cast<size_t>(code)].load(); }
  // Connections the reducer closed (EOF or reset) without the client closing first.
  uint64_t closed_by_reducer() const { return closed_by_reducer_.load(); }

 private:
  class Client;
  static size_t Index(Hostility kind) { return static_cast<size_t>(kind); }
  void Launch(Hostility kind, const asio::ip::address& source, int max_total);

  const AttackPlan plan_;
  asio::io_context io_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::vector<std::weak_ptr<Client>> clients_;  // for Stop()
  std::array<std::atomic<uint64_t>, kHostilities> connections_{};
  std::array<std::atomic<uint64_t>, 12> errors_{};
  std::atomic<uint64_t> closed_by_reducer_{0};
};

// Raises this process's descriptor limit to at least `want` (up to the hard
// limit); returns the soft limit now in effect.
size_t RaiseOpenFileLimit(size_t want);

}  // namespace rs::testing
