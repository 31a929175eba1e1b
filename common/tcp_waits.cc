#include "common/tcp_waits.h"

#include <sys/socket.h>

#include <cstdio>

#include "common/units.h"

namespace rs {

std::optional<TcpWaitFinding> TcpWaitWatch::OnSample(const TcpPath& path, Clock::time_point now) {
  // A counter going back means a connection this watch was not told about:
  // judge from here on.
  if (have_base_ && (path.busy_us < last_.busy_us || path.rwnd_limited_us < last_.rwnd_limited_us ||
                     path.sndbuf_limited_us < last_.sndbuf_limited_us)) {
    have_base_ = false;
  }
  if (!have_base_) {
    // The counters of a connection seen for the first time count from 0.
    last_ = TcpPath{};
    period_ = TcpPath{};
    have_base_ = true;
    warmed_up_ = false;
  }
  totals_.busy_us += path.busy_us - last_.busy_us;
  totals_.rwnd_limited_us += path.rwnd_limited_us - last_.rwnd_limited_us;
  totals_.sndbuf_limited_us += path.sndbuf_limited_us - last_.sndbuf_limited_us;
  last_ = path;

  const uint64_t busy = path.busy_us - period_.busy_us;
  if (busy < static_cast<uint64_t>(kJudgedBusy.count())) return std::nullopt;
  const uint64_t rwnd = path.rwnd_limited_us - period_.rwnd_limited_us;
  const uint64_t sndbuf = path.sndbuf_limited_us - period_.sndbuf_limited_us;
  period_ = path;
  if (!warmed_up_) {
    warmed_up_ = true;
    return std::nullopt;
  }

  const TcpWait cause = rwnd >= sndbuf ? TcpWait::kReceiveWindow : TcpWait::kSendBuffer;
  const double share = static_cast<double>(rwnd >= sndbuf ? rwnd : sndbuf) / static_cast<double>(busy);
  if (share < kReportShare) return std::nullopt;
  std::optional<Clock::time_point>& last_report = reported_[static_cast<int>(cause)];
  if (last_report && now - *last_report < kQuiet) return std::nullopt;
  last_report = now;

  TcpWaitFinding out;
  out.cause = cause;
  out.share = share;
  out.busy = std::chrono::microseconds(busy);
  out.min_rtt = std::chrono::microseconds(path.min_rtt_us);
  out.delivery_bytes_per_second = path.delivery_rate_bps;
  return out;
}

std::string DescribeTcpWait(const TcpWaitFinding& finding, const std::string& peer, uint64_t send_buffer_bytes) {
  char head_buf[160];
  std::snprintf(head_buf, sizeof(head_buf), "for %.0f %% of the %.1f s it had bytes to send, TCP waited for ",
                finding.share * 100.0, static_cast<double>(finding.busy.count()) / 1e6);
  const std::string head = head_buf;
  std::string path;
  if (finding.min_rtt.count() > 0) {
    char rtt[48];
    std::snprintf(rtt, sizeof(rtt), "round trip %.1f ms", static_cast<double>(finding.min_rtt.count()) / 1e3);
    path = rtt;
  }
  if (finding.delivery_bytes_per_second > 0) {
    if (!path.empty()) path += ", ";
    path += FormatBytes(finding.delivery_bytes_per_second) + "/s delivered";
  }
  if (finding.cause == TcpWait::kReceiveWindow) {
    return head + peer + "'s receive window" + (path.empty() ? "" : " (" + path + ")") +
           ": the receive buffers' ceiling on " + peer +
           "'s host (the third value of net.ipv4.tcp_rmem) is below twice the path's bandwidth-delay product, or " +
           peer + " reads too slowly (short of CPU, say); see docs/guide/tuning.md";
  }
  if (send_buffer_bytes > 0) {
    if (!path.empty()) path += ", ";
    path += "send buffer " + FormatBytes(send_buffer_bytes);
  }
  return head + "room in this host's send buffer" + (path.empty() ? "" : " (" + path + ")") +
         ": raise the send buffers' ceiling on this host (the third value of net.ipv4.tcp_wmem) to at least twice "
         "the path's bandwidth-delay product; see docs/guide/tuning.md";
}

uint64_t SendBufferBytes(int fd) {
  int bytes = 0;
  socklen_t len = sizeof(bytes);
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, &len) != 0 || bytes < 0) return 0;
  return static_cast<uint64_t>(bytes);
}

}  // namespace rs
