#include "bench/netns/tap_device.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace rs::delay_line {
namespace {

std::string Errno(int err) { return std::strerror(err); }

std::string RootHint(int err) {
  if (err != EPERM && err != EACCES) return "";
  return geteuid() == 0 ? " (root, but without CAP_SYS_ADMIN/CAP_NET_ADMIN here?)"
                        : " (not root: run it as root, it needs CAP_SYS_ADMIN and CAP_NET_ADMIN)";
}

// Inside a network namespace from Enter() until destruction.
class NetnsGuard {
 public:
  static StatusOr<std::unique_ptr<NetnsGuard>> Enter(int home, const Endpoint& where) {
    Fd ns(open(where.Path().c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) {
      const int err = errno;
      if (err == ENOENT) {
        return Status(Code::kInvalidArgument, "no network namespace '" + where.netns + "' (" + where.Path() +
                                                  " does not exist; create it with ip netns add)");
      }
      return Status(Code::kIo, "cannot open " + where.Path() + ": " + Errno(err) + RootHint(err));
    }
    if (setns(ns.get(), CLONE_NEWNET) != 0) {
      const int err = errno;
      return Status(Code::kIo, "cannot enter network namespace '" + where.netns + "': " + Errno(err) + RootHint(err));
    }
    return std::unique_ptr<NetnsGuard>(new NetnsGuard(home));
  }
  ~NetnsGuard() {
    if (setns(home_, CLONE_NEWNET) != 0) {
      // Everything after this would happen in the wrong namespace.
      std::fprintf(stderr, "rs-delay-line: cannot return to the original network namespace: %s\n",
                   Errno(errno).c_str());
      std::abort();
    }
  }
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;

 private:
  explicit NetnsGuard(int home) : home_(home) {}
  int home_;
};

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Fd::Reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string Endpoint::Path() const { return netns.find('/') == std::string::npos ? "/var/run/netns/" + netns : netns; }

StatusOr<Fd> OpenTap(int home_netns, const Endpoint& where) {
  if (where.ifname.empty() || where.ifname.size() >= IFNAMSIZ) {
    return Status(Code::kInvalidArgument, "'" + where.ifname + "' is not a device name (1 to 15 characters)");
  }
  auto guard = NetnsGuard::Enter(home_netns, where);
  if (!guard.ok()) return guard.status();
  // A tap belongs to the namespace /dev/net/tun was opened in.
  Fd tun(open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!tun.valid()) {
    const int err = errno;
    if (err == ENOENT || err == ENODEV || err == ENXIO) {
      return Status(Code::kIo, "no /dev/net/tun (" + Errno(err) +
                                   "): the kernel's tun driver is missing (modprobe tun) or the device node is "
                                   "not there (mknod /dev/net/tun c 10 200)");
    }
    return Status(Code::kIo, "cannot open /dev/net/tun: " + Errno(err) + RootHint(err));
  }
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  std::memcpy(ifr.ifr_name, where.ifname.c_str(), where.ifname.size());
  if (ioctl(tun.get(), TUNSETIFF, &ifr) != 0) {
    const int err = errno;
    std::string why = Errno(err) + RootHint(err);
    if (err == EBUSY || err == EINVAL || err == EEXIST) {
      why += " (is there already a device named " + where.ifname + " in " + where.netns + "?)";
    }
    return Status(Code::kIo, "cannot create tap " + where.ToString() + ": " + why);
  }
  const unsigned offload = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
  if (ioctl(tun.get(), TUNSETOFFLOAD, offload) != 0) {
    return Status(Code::kIo, "tap " + where.ToString() + ": TUNSETOFFLOAD: " + Errno(errno));
  }
  return tun;
}

}  // namespace rs::delay_line
