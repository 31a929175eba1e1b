// What both ends of the data plane ask of TCP on each of their sockets,
// beyond liveness (socket_options.h): the congestion control, the floor of
// the retransmission timeout and, on the workers' streams, pacing. Settings
// REDUCER_TCP_CONGESTION, REDUCER_TCP_RTO_MIN (reducerd: --tcp-congestion,
// --tcp-rto-min) and REDUCER_TCP_PACING (workers only).
//
// Why (docs/performance.md, "BBR and loss"): under BBR a worker's stream sent
// part of a piece and then held the rest 20 - 50 ms with nothing in flight,
// its window and congestion window open: BBR's pacing, timed from a low rate
// estimate after the stream's idle gap, and one late piece holds the whole
// operation. Cubic and reno do not pace. And a segment lost at the tail of a
// piece costs the kernel's minimum retransmission timeout, 200 ms, while a
// whole 1 MiB operation takes about 9 ms at 1 Gbit/s; inside a cluster a
// floor of a few ms is enough.
//
// Pacing is the other way round: many workers' streams into one reducer
// (16 and more) sent each congestion window as one burst at the line rate,
// all at once, and the switch's port towards the reducer dropped what its
// buffer could not hold (docs/performance.md, "Sixteen workers: incast").
// Paced, TCP spreads each window over the round trip. Without the fq qdisc,
// a socket's pacing rate limit (SO_MAX_PACING_RATE) is what turns the
// kernel's own pacing on; a limit no link reaches leaves the rate to the
// congestion control.
//
// Every choice here is per socket and needs no privilege: a process may
// always pick reno and any algorithm the host allows
// (net.ipv4.tcp_allowed_congestion_control), and TCP_RTO_MIN_US (recent kernels)
// only lowers the floor of this socket. Where the kernel refuses, the socket
// keeps the host's choice and the log line says so.
//
// Thread-safe: no state but the set of lines already logged.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/default_value.h"
#include "common/status.h"

namespace rs {

// Both ends' defaults, shown by both settings registries.
inline constexpr Default<const char*> kDefaultTcpCongestion{"auto", "auto"};
inline constexpr Default<std::chrono::milliseconds> kDefaultTcpRtoMin{std::chrono::milliseconds(5), "5ms"};

struct TcpTuning {
  // "auto": where the host's default is bbr (any bbr variant), cubic where
  // the host allows it, else reno; any other default is kept. "system": the
  // host's default, untouched. Otherwise an algorithm's name (cubic, reno,
  // bbr, dctcp...), used where the kernel allows it.
  std::string congestion = kDefaultTcpCongestion.value;
  // The floor of the retransmission timeout (TCP_RTO_MIN_US); 0: the
  // kernel's own (200 ms unless the route or net.ipv4.tcp_rto_min_us says
  // otherwise). The kernel rounds it up to its timer tick.
  std::chrono::milliseconds rto_min = kDefaultTcpRtoMin.value;
  // TCP's own pacing on the socket (see above). The client decides
  // (client/transport_plan.h, AutoTcpPacing); reducerd never paces.
  bool pacing = false;
};

// Checks a setting's text: "auto", "system", or a name of letters, digits
// and '_' (at most 15 characters, the kernel's limit); the floor 0 or 1 ms to
// 200 ms. The error names the setting `name` and the value.
Status ValidateTcpCongestion(const std::string& name, const std::string& value);
Status ValidateTcpRtoMin(const std::string& name, std::chrono::milliseconds value);

// What one socket got.
struct TcpTuningResult {
  std::string host_default;  // the network namespace's default (net.ipv4.tcp_congestion_control)
  std::string congestion;    // what it runs now
  std::string congestion_note;  // why, when it is not what was asked (empty otherwise)
  std::optional<std::chrono::microseconds> rto_min;  // set: the floor now in force on it
  std::string rto_note;      // why the kernel's floor applies, when asked otherwise
  bool paced = false;        // pacing was asked and is on
  std::string pacing_note;   // why not, when pacing was asked and refused
  // An algorithm named in the setting (or, for auto, both cubic and reno),
  // or pacing, was refused: worth a warning, not a notice.
  bool refused = false;

  // One line for the log: "TCP on the data plane: congestion control cubic
  // (host default bbr; auto), minimum retransmission timeout 8 ms, paced".
  std::string Describe() const;
};

// Applies `tuning` to a TCP socket (connected or not). Never fails: what the
// kernel refuses is described in the result.
TcpTuningResult ApplyTcpTuning(int fd, const TcpTuning& tuning);

// The same on a fresh, unconnected socket: what every data-plane socket of
// this process will get, for a start-up log line.
TcpTuningResult ProbeTcpTuning(const TcpTuning& tuning);

// result.Describe() the first time this process sees that line, nullopt
// afterwards: one log line per distinct outcome, not one per socket.
std::optional<std::string> TcpTuningLineOnce(const TcpTuningResult& result);

// The floor a path calls for: the configured one, raised to twice the path's
// smallest round trip, never above the kernel's own 200 ms.
//
// Why: Linux restarts the congestion window of a connection idle for longer
// than its retransmission timeout (net.ipv4.tcp_slow_start_after_idle=1, its
// default), and the timeout is the smoothed round trip plus at least the
// floor. One operation at a time leaves every stream idle for about a round
// trip (the wait for the last results), so a floor far below the round trip
// restarted every window at every operation: at 80 ms, 5 ms cost 0.3 - 0.4 s
// per 64 MiB operation at 200 Mbit/s (docs/performance.md). Inside a
// cluster (round trips well under 2.5 ms) the configured floor stands.
std::chrono::microseconds RtoFloorForPath(std::chrono::milliseconds configured, std::chrono::microseconds min_rtt);

// Keeps one socket's floor at RtoFloorForPath as its path's round trip
// becomes known (TCP_INFO's tcpi_min_rtt, sampled by the caller). Inactive
// when the configured floor is 0 (the kernel's own) or the kernel has no
// per-socket floor. Not thread-safe: one per socket, on its thread.
//
// Raise it as soon as the connection is up (RaiseRtoFloorAtConnect): Linux
// starts its estimate of the round trip's variation at twice the first
// sample and lets it decay, each round trip, toward the floor then in force;
// a floor raised later stops the decay but does not lift the estimate back,
// so the timeout stays short (seen: 124 ms at 80 ms with the floor raised to
// 164 ms after the first operation).
class RtoFloorFollower {
 public:
  explicit RtoFloorFollower(std::chrono::milliseconds configured) : configured_(configured), set_(configured) {}

  // Sets the floor for a path of `min_rtt` where it differs from the last
  // one set; returns the floor now in force when it changed, else nullopt.
  // A min_rtt of 0 (no sample yet) changes nothing.
  std::optional<std::chrono::microseconds> OnPath(int fd, std::chrono::microseconds min_rtt);

 private:
  std::chrono::milliseconds configured_;
  std::chrono::microseconds set_;  // the last floor asked for; at first the configured one (ApplyTcpTuning)
  bool gave_up_ = false;
};

// follower.OnPath with the round trip TCP measured in the handshake, for a
// socket whose connection just came up (connected or accepted). Returns
// RtoFloorLineOnce's line when it raised the floor: the caller logs it
// (level info).
std::optional<std::string> RaiseRtoFloorAtConnect(int fd, RtoFloorFollower& follower);

// "TCP on the data plane: minimum retransmission timeout raised to 164 ms on
// a path of 80.2 ms round trip (...)" the first time in this process,
// nullopt afterwards: one line, not one per socket.
std::optional<std::string> RtoFloorLineOnce(std::chrono::microseconds floor, std::chrono::microseconds min_rtt);

}  // namespace rs
