// Tap devices created inside named network namespaces, for rs-delay-line:
// Fd (an owned file descriptor), Endpoint (NETNS:IFNAME) and OpenTap.
// OpenTap switches the calling thread's network namespace while it works and
// switches back before it returns: call it before other threads exist.
#pragma once

#include <string>

#include "common/status.h"

namespace rs::delay_line {

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  void Reset();
  int fd_ = -1;
};

// One end of a link: a device name inside a network namespace.
struct Endpoint {
  std::string netns;  // a name under /var/run/netns, or a path (/proc/PID/ns/net)
  std::string ifname;
  std::string ToString() const { return netns + ":" + ifname; }
  std::string Path() const;
};

// Creates tap `where.ifname` inside `where.netns` (IFF_VNET_HDR, checksum and
// TSO offload offered, so the kernel hands over whole GSO frames with their
// virtio_net_hdr), non-blocking and non-persistent: it disappears with the
// fd. `home_netns` is an fd of the namespace to return to. Errors name the
// cause (missing namespace, no /dev/net/tun, not root, name taken).
StatusOr<Fd> OpenTap(int home_netns, const Endpoint& where);

}  // namespace rs::delay_line
