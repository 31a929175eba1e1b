#include "common/tcp_tuning.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>

#include "common/tcp_path.h"

namespace rs {
namespace {

// The per-socket floor of the retransmission timeout (recent kernels), in
// microseconds; older headers do not name it.
#ifndef TCP_RTO_MIN_US
constexpr int TCP_RTO_MIN_US = 45;
#endif

constexpr std::chrono::milliseconds kMaxRtoMin{200};  // the kernel's own floor, TCP_RTO_MIN

std::string CurrentCongestion(int fd) {
  char name[32] = {};
  socklen_t len = sizeof(name) - 1;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, len));
}

// 0 on success, else errno.
int SetCongestion(int fd, const std::string& name) {
  return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0 ? 0
                                                                                                              : errno;
}

std::string Refusal(const std::string& name, int err) {
  if (err == ENOENT) return name + " is not available in this kernel";
  if (err == EPERM) return name + " is not allowed here (net.ipv4.tcp_allowed_congestion_control)";
  return name + " refused: " + std::strerror(err);
}

// The default of this network namespace (a container's own), which a
// socket accepted from a tuned listener no longer shows; the socket's own
// algorithm where the file cannot be read.
std::string HostDefault(const std::string& socket_now) {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  if (in >> name) return name;
  return socket_now;
}

void ApplyCongestion(int fd, const std::string& wanted, TcpTuningResult* out) {
  const std::string now = CurrentCongestion(fd);
  out->host_default = HostDefault(now);
  out->congestion = now;
  if (wanted == "system") return;
  if (wanted != "auto") {
    if (wanted == now) return;
    const int err = SetCongestion(fd, wanted);
    if (err == 0) {
      out->congestion = wanted;
    } else {
      out->congestion_note = Refusal(wanted, err) + "; kept " + now;
      out->refused = true;
    }
    return;
  }
  // auto: only BBR is replaced (its pacing held pieces back; tcp_tuning.h).
  if (now.rfind("bbr", 0) != 0) return;
  const int err = SetCongestion(fd, "cubic");
  if (err == 0) {
    out->congestion = "cubic";
    return;
  }
  // Reno is open to every process, whatever the allowed list says.
  if (SetCongestion(fd, "reno") == 0) {
    out->congestion = "reno";
    out->congestion_note = Refusal("cubic", err) + "; reno instead";
    return;
  }
  out->congestion_note = Refusal("cubic", err) + " and reno was refused too; kept " + now;
  out->refused = true;
}

// Sets the floor to `us`, or the least the kernel takes above it: it takes
// no less than two timer ticks (8 ms at HZ=250), so double until it accepts,
// up to its own floor. 0 with *now the floor in force, else errno.
int SetRtoFloor(int fd, int64_t us, std::chrono::microseconds* now) {
  int err = EINVAL;
  for (; us <= int64_t{kMaxRtoMin.count()} * 1000; us *= 2) {
    const int value = static_cast<int>(us);
    if (setsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &value, sizeof(value)) == 0) {
      int got = 0;
      socklen_t len = sizeof(got);
      if (getsockopt(fd, IPPROTO_TCP, TCP_RTO_MIN_US, &got, &len) != 0) got = value;
      *now = std::chrono::microseconds(got);
      return 0;
    }
    err = errno;
    if (err != EINVAL) break;
  }
  return err;
}

void ApplyRtoMin(int fd, std::chrono::milliseconds floor, TcpTuningResult* out) {
  if (floor.count() <= 0) return;
  std::chrono::microseconds now{0};
  const int err = SetRtoFloor(fd, floor.count() * 1000, &now);
  if (err == 0) {
    out->rto_min = now;
    return;
  }
  out->rto_note = err == ENOPROTOOPT
                      ? "this kernel has no per-socket floor (TCP_RTO_MIN_US): its own applies"
                      : std::string("TCP_RTO_MIN_US refused: ") + std::strerror(err) + "; the kernel's own applies";
}

// A rate limit no link reaches (2^40 bytes/s, about 8.8 Tbit/s): setting
// any limit but "none" (~0) turns the kernel's internal TCP pacing on for
// the socket, at the rate its congestion control computes (on this
// project's test machine, 6.18, the switch's drops at 16 + 16 hosts fell
// fivefold; a kernel without internal pacing only records the limit).
constexpr uint64_t kPacingRateLimit = uint64_t{1} << 40;

void ApplyPacing(int fd, bool pacing, TcpTuningResult* out) {
  if (!pacing) return;
  const uint64_t rate = kPacingRateLimit;
  if (setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate)) == 0) {
    out->paced = true;
    return;
  }
  out->pacing_note = std::string("SO_MAX_PACING_RATE refused: ") + std::strerror(errno);
  out->refused = true;  // incast goes unchecked: a warning
}

std::string FormatFloor(std::chrono::microseconds us) {
  if (us.count() % 1000 == 0) return std::to_string(us.count() / 1000) + " ms";
  return std::to_string(us.count()) + " us";
}

}  // namespace

Status ValidateTcpCongestion(const std::string& name, const std::string& value) {
  bool ok = !value.empty() && value.size() <= 15;
  for (char c : value) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (ok) return Status::Ok();
  return Status(Code::kInvalidArgument, name + "='" + value +
                                            "': give auto, system or an algorithm's name (cubic, reno, bbr...)");
}

Status ValidateTcpRtoMin(const std::string& name, std::chrono::milliseconds value) {
  if (value.count() >= 0 && value <= kMaxRtoMin) return Status::Ok();
  return Status(Code::kInvalidArgument, name + "=" + std::to_string(value.count()) +
                                            "ms: give 0 (the kernel's own) or 1ms to 200ms");
}

std::string TcpTuningResult::Describe() const {
  std::string line = "TCP on the data plane: congestion control " + (congestion.empty() ? "unknown" : congestion);
  std::string why;
  if (congestion != host_default && !host_default.empty()) why = "host default " + host_default;
  if (!congestion_note.empty()) why += (why.empty() ? "" : "; ") + congestion_note;
  if (!why.empty()) line += " (" + why + ")";
  if (rto_min) {
    line += ", minimum retransmission timeout " + FormatFloor(*rto_min);
  } else if (!rto_note.empty()) {
    line += ", minimum retransmission timeout: " + rto_note;
  }
  if (paced) {
    line += ", paced";
  } else if (!pacing_note.empty()) {
    line += ", not paced: " + pacing_note;
  }
  return line;
}

TcpTuningResult ApplyTcpTuning(int fd, const TcpTuning& tuning) {
  TcpTuningResult out;
  ApplyCongestion(fd, tuning.congestion, &out);
  ApplyRtoMin(fd, tuning.rto_min, &out);
  ApplyPacing(fd, tuning.pacing, &out);
  return out;
}

TcpTuningResult ProbeTcpTuning(const TcpTuning& tuning) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    TcpTuningResult out;
    out.congestion_note = std::string("cannot open a TCP socket: ") + std::strerror(errno);
    return out;
  }
  TcpTuningResult out = ApplyTcpTuning(fd, tuning);
  ::close(fd);
  return out;
}

std::optional<std::string> TcpTuningLineOnce(const TcpTuningResult& result) {
  // Destroyed with the library: the NCCL plugin is unloaded and loaded
  // again, and memory only a static pointer held would then leak.
  static std::mutex mu;
  static std::set<std::string> seen;
  std::string line = result.Describe();
  std::lock_guard<std::mutex> lock(mu);
  if (!seen.insert(line).second) return std::nullopt;
  return line;
}

std::chrono::microseconds RtoFloorForPath(std::chrono::milliseconds configured, std::chrono::microseconds min_rtt) {
  if (configured.count() <= 0) return configured;
  return std::max<std::chrono::microseconds>(configured, std::min<std::chrono::microseconds>(2 * min_rtt, kMaxRtoMin));
}

std::optional<std::chrono::microseconds> RtoFloorFollower::OnPath(int fd, std::chrono::microseconds min_rtt) {
  if (gave_up_ || configured_.count() <= 0 || min_rtt.count() <= 0) return std::nullopt;
  const std::chrono::microseconds want = RtoFloorForPath(configured_, min_rtt);
  if (want == set_) return std::nullopt;
  std::chrono::microseconds now{0};
  if (SetRtoFloor(fd, want.count(), &now) != 0) {
    gave_up_ = true;  // the kernel's own floor applies, as ApplyTcpTuning said
    return std::nullopt;
  }
  set_ = want;
  return now;
}

std::optional<std::string> RaiseRtoFloorAtConnect(int fd, RtoFloorFollower& follower) {
  const std::optional<TcpPath> path = ReadTcpPath(fd);
  if (!path) return std::nullopt;
  const std::chrono::microseconds min_rtt(path->min_rtt_us);
  const std::optional<std::chrono::microseconds> floor = follower.OnPath(fd, min_rtt);
  if (!floor) return std::nullopt;
  return RtoFloorLineOnce(*floor, min_rtt);
}

std::optional<std::string> RtoFloorLineOnce(std::chrono::microseconds floor, std::chrono::microseconds min_rtt) {
  static std::mutex mu;
  static bool said = false;
  std::lock_guard<std::mutex> lock(mu);
  if (said) return std::nullopt;
  said = true;
  char rtt[32];
  std::snprintf(rtt, sizeof(rtt), "%.1f ms", static_cast<double>(min_rtt.count()) / 1000.0);
  return "TCP on the data plane: minimum retransmission timeout raised to " + FormatFloor(floor) + " on a path of " +
         rtt + " round trip (at least twice the round trip, so that the pause between two operations does not " +
         "restart the congestion window)";
}

}  // namespace rs
