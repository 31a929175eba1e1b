#include "common/tcp_path.h"

#ifdef __linux__
// The kernel's struct (glibc's netinet/tcp.h stops before the fields used
// here); the two headers cannot be mixed, hence a file of its own.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#endif

namespace rs {

std::optional<TcpPath> ReadTcpPath(int fd) {
#ifdef __linux__
  struct tcp_info info {};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  // An older kernel fills less: what it did not fill reads as "not measured".
  TcpPath out;
  if (len >= offsetof(struct tcp_info, tcpi_min_rtt) + sizeof(info.tcpi_min_rtt)) out.min_rtt_us = info.tcpi_min_rtt;
  if (len >= offsetof(struct tcp_info, tcpi_delivery_rate) + sizeof(info.tcpi_delivery_rate)) {
    out.delivery_rate_bps = info.tcpi_delivery_rate;
  }
  if (len >= offsetof(struct tcp_info, tcpi_sndbuf_limited) + sizeof(info.tcpi_sndbuf_limited)) {
    out.busy_us = info.tcpi_busy_time;
    out.rwnd_limited_us = info.tcpi_rwnd_limited;
    out.sndbuf_limited_us = info.tcpi_sndbuf_limited;
  }
  return out;
#else
  (void)fd;
  return std::nullopt;
#endif
}

}  // namespace rs
