// rs-delay-line: a link delay in user space for the network-namespace harness
// (bench/netns/netns_lib.sh) on kernels without the netem qdisc. For each
// --pair it creates two tap devices, one in each named network namespace
// (e.g. eth0 in a host, p0 in the switch), and forwards every frame read from
// one tap to the other after a fixed one-way delay, both directions. The taps
// take whole GSO frames (up to 64 KiB) with their virtio_net_hdr, which is
// passed on unchanged, so checksum and segmentation offload survive and a
// 200 Mbit/s link costs a few thousand frames a second.
//
// One thread: epoll over the taps, a signalfd and a timerfd armed for the
// earliest frame due. The delay is constant, so each direction is a FIFO.
// Each direction's queue is bounded in bytes; a frame that does not fit is
// dropped and counted. It also stops when its parent process exits, so a
// harness killed with SIGKILL leaves no delay line holding its namespaces.
// Exit status: 0 after SIGTERM/SIGINT or the parent's exit (with a one-line
// summary on stdout), 1 on a failure (named on stderr), 2 for bad flags.
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli_parse.h"
#include "common/status.h"
#include "common/units.h"

namespace rs::delay_line {
namespace {

constexpr int64_t kMaxDelayNs = int64_t{60} * 1000 * 1000 * 1000;
// A GSO frame is at most 64 KiB plus the Ethernet header; the virtio_net_hdr
// comes in front. A read that fills the whole buffer was truncated.
constexpr size_t kReadBuffer = 128 * 1024;
// struct virtio_net_hdr, the tap's default header (TUNSETVNETHDRSZ unset).
constexpr ssize_t kVnetHdrBytes = 10;
// Frames taken from one tap per wake-up, so one busy link cannot starve the others.
constexpr int kReadBatch = 64;

std::string Errno(int err) { return std::strerror(err); }

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

 private:
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// "20ms", "500us", "0.02s", "0": microsecond resolution; a unit is required
// (tc reads a bare number as microseconds, people as milliseconds).
StatusOr<int64_t> ParseDelay(const std::string& text) {
  const Status bad(Code::kInvalidArgument,
                   "--delay '" + text + "' is not a delay (examples: 20ms, 500us, 0.02s; at most 60s)");
  char* end = nullptr;
  const double n = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(n) || n < 0) return bad;
  const std::string unit(end);
  double ns = 0;
  if (unit == "us") {
    ns = n * 1e3;
  } else if (unit == "ms") {
    ns = n * 1e6;
  } else if (unit == "s") {
    ns = n * 1e9;
  } else if (unit.empty() && n == 0) {
    ns = 0;
  } else {
    return bad;
  }
  if (ns > static_cast<double>(kMaxDelayNs)) return bad;
  return static_cast<int64_t>(std::llround(ns / 1e3)) * 1000;
}

struct Endpoint {
  std::string netns;  // a name under /var/run/netns, or a path (/proc/PID/ns/net)
  std::string ifname;
  std::string ToString() const { return netns + ":" + ifname; }
  std::string Path() const { return netns.find('/') == std::string::npos ? "/var/run/netns/" + netns : netns; }
};

StatusOr<Endpoint> ParseEndpoint(const std::string& text, const std::string& pair) {
  const size_t colon = text.rfind(':');
  const Status bad(Code::kInvalidArgument,
                   "--pair '" + pair + "': each side must be NETNS:IFNAME (example: rsb1-h0:eth0=rsb1-sw:p0)");
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return bad;
  Endpoint e{text.substr(0, colon), text.substr(colon + 1)};
  if (e.ifname.size() >= IFNAMSIZ || e.ifname.find('/') != std::string::npos) {
    return Status(Code::kInvalidArgument,
                  "--pair '" + pair + "': '" + e.ifname + "' is not a device name (at most 15 characters, no '/')");
  }
  return e;
}

struct Options {
  int64_t delay_ns = 0;
  std::vector<std::pair<Endpoint, Endpoint>> pairs;
  uint64_t queue_limit = uint64_t{64} << 20;
  std::string ready_file;
};

// Enters a network namespace and comes back on destruction (or Leave()).
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

  static std::string RootHint(int err) {
    if (err != EPERM && err != EACCES) return "";
    return geteuid() == 0 ? " (root, but without CAP_SYS_ADMIN/CAP_NET_ADMIN here?)"
                          : " (not root: run it as root, it needs CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  }

 private:
  explicit NetnsGuard(int home) : home_(home) {}
  int home_;
};

// Creates tap `where.ifname` inside namespace `where.netns` (non-persistent:
// it disappears with the fd), offering checksum and TSO offload so that the
// kernel hands over whole GSO frames.
StatusOr<Fd> OpenTap(int home, const Endpoint& where) {
  auto guard = NetnsGuard::Enter(home, where);
  if (!guard.ok()) return guard.status();
  // The tap belongs to the namespace /dev/net/tun was opened in.
  Fd tun(open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!tun.valid()) {
    const int err = errno;
    if (err == ENOENT || err == ENODEV || err == ENXIO) {
      return Status(Code::kIo, "no /dev/net/tun (" + Errno(err) +
                                   "): the kernel's tun driver is missing (modprobe tun) or the device node is "
                                   "not there (mknod /dev/net/tun c 10 200)");
    }
    return Status(Code::kIo, "cannot open /dev/net/tun: " + Errno(err) + NetnsGuard::RootHint(err));
  }
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  std::memcpy(ifr.ifr_name, where.ifname.c_str(), where.ifname.size());
  if (ioctl(tun.get(), TUNSETIFF, &ifr) != 0) {
    const int err = errno;
    std::string why = Errno(err) + NetnsGuard::RootHint(err);
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

struct Frame {
  int64_t due_ns;
  std::vector<uint8_t> bytes;  // virtio_net_hdr + Ethernet frame, as read
};

// One direction of one link: frames read from `from` wait in a FIFO until
// due, then are written to `to`.
struct Direction {
  std::string name;
  int from = -1;
  int to = -1;
  std::deque<Frame> queue;
  uint64_t queued_bytes = 0;
  uint64_t frames = 0, bytes = 0;      // forwarded
  uint64_t drops = 0, drop_bytes = 0;  // did not fit in the queue
  uint64_t write_errors = 0;           // the kernel refused a frame
  int last_write_errno = 0;
  uint64_t max_queued_bytes = 0;
  int64_t late_sum_ns = 0, late_max_ns = 0;  // written after the due time: the delay line's own error
};

class DelayLine {
 public:
  // Creates every tap (while single-threaded, entering each namespace in turn).
  static StatusOr<std::unique_ptr<DelayLine>> Create(const Options& o);
  // Forwards until SIGTERM or SIGINT; an error if a tap fails.
  Status Run();
  std::string Summary() const;
  size_t tap_count() const { return taps_.size(); }

 private:
  explicit DelayLine(const Options& o) : options_(o), buffer_(kReadBuffer) {}
  Status ReadFrames(Direction& d, int64_t now);
  // Writes every frame that is due.
  void Flush();
  Status ArmTimer();

  Options options_;
  std::vector<Fd> taps_;
  std::vector<Direction> directions_;  // 2k: pair k's first tap to its second, 2k+1 back
  Fd epoll_, timer_, signals_;
  int64_t armed_ns_ = -1;
  std::vector<uint8_t> buffer_;
};

constexpr uint64_t kSignalTag = ~uint64_t{0};
constexpr uint64_t kTimerTag = ~uint64_t{0} - 1;

StatusOr<std::unique_ptr<DelayLine>> DelayLine::Create(const Options& o) {
  std::unique_ptr<DelayLine> line(new DelayLine(o));
  Fd home(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!home.valid()) return Status(Code::kIo, "cannot open /proc/self/ns/net: " + Errno(errno));
  for (const auto& [a, b] : o.pairs) {
    for (const Endpoint* e : {&a, &b}) {
      auto tap = OpenTap(home.get(), *e);
      if (!tap.ok()) return tap.status();
      line->taps_.push_back(std::move(*tap));
    }
    const int fa = line->taps_[line->taps_.size() - 2].get();
    const int fb = line->taps_.back().get();
    Direction ab, ba;
    ab.name = a.ToString() + "->" + b.ToString();
    ab.from = fa;
    ab.to = fb;
    ba.name = b.ToString() + "->" + a.ToString();
    ba.from = fb;
    ba.to = fa;
    line->directions_.push_back(std::move(ab));
    line->directions_.push_back(std::move(ba));
  }

  line->epoll_ = Fd(epoll_create1(EPOLL_CLOEXEC));
  line->timer_ = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  // A background job of a non-interactive shell starts with SIGINT ignored;
  // an ignored signal is never queued, so restore the default before blocking.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  // The parent's exit as a SIGTERM; if it is already gone, stop at once.
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && getppid() != parent) raise(SIGTERM);
  line->signals_ = Fd(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!line->epoll_.valid() || !line->timer_.valid() || !line->signals_.valid()) {
    return Status(Code::kIo, "epoll/timerfd/signalfd: " + Errno(errno));
  }
  auto add = [&](int fd, uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return epoll_ctl(line->epoll_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
  };
  bool ok = add(line->signals_.get(), kSignalTag) && add(line->timer_.get(), kTimerTag);
  for (size_t i = 0; i < line->directions_.size(); ++i) ok = ok && add(line->directions_[i].from, i);
  if (!ok) return Status(Code::kIo, "epoll_ctl: " + Errno(errno));
  return line;
}

Status DelayLine::ReadFrames(Direction& d, int64_t now) {
  for (int n = 0; n < kReadBatch; ++n) {
    const ssize_t got = read(d.from, buffer_.data(), buffer_.size());
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) return Status::Ok();
      return Status(Code::kIo, "reading from tap " + d.name.substr(0, d.name.find("->")) + ": " + Errno(errno));
    }
    if (got < kVnetHdrBytes) continue;  // nothing a tap sends; nothing to forward
    if (static_cast<size_t>(got) == buffer_.size()) {
      return Status(Code::kInternal, "a frame of " + std::to_string(got) + "+ bytes from " + d.name +
                                         " did not fit the read buffer (GSO larger than 64 KiB?)");
    }
    const auto len = static_cast<uint64_t>(got);
    if (d.queued_bytes + len > options_.queue_limit) {
      ++d.drops;
      d.drop_bytes += len;
      continue;
    }
    d.queue.push_back(Frame{now + options_.delay_ns, std::vector<uint8_t>(buffer_.begin(), buffer_.begin() + got)});
    d.queued_bytes += len;
    if (d.queued_bytes > d.max_queued_bytes) d.max_queued_bytes = d.queued_bytes;
  }
  return Status::Ok();
}

void DelayLine::Flush() {
  int64_t now = NowNs();
  for (Direction& d : directions_) {
    while (!d.queue.empty() && d.queue.front().due_ns <= now) {
      const Frame& f = d.queue.front();
      const int64_t late = now - f.due_ns;
      d.late_sum_ns += late;
      if (late > d.late_max_ns) d.late_max_ns = late;
      const ssize_t put = write(d.to, f.bytes.data(), f.bytes.size());
      if (put == static_cast<ssize_t>(f.bytes.size())) {
        ++d.frames;
        d.bytes += f.bytes.size();
      } else {
        ++d.write_errors;  // e.g. the receiving tap is down: a lost frame, as on a wire
        d.last_write_errno = put < 0 ? errno : EIO;
      }
      d.queued_bytes -= f.bytes.size();
      d.queue.pop_front();
      now = NowNs();  // the write ran the receiving side's stack: time has passed
    }
  }
}

Status DelayLine::ArmTimer() {
  int64_t due = -1;
  for (const Direction& d : directions_) {
    if (!d.queue.empty() && (due < 0 || d.queue.front().due_ns < due)) due = d.queue.front().due_ns;
  }
  if (due == armed_ns_) return Status::Ok();
  itimerspec spec{};  // all zero: disarmed
  if (due >= 0) {
    spec.it_value.tv_sec = due / 1000000000;
    spec.it_value.tv_nsec = due % 1000000000;
    if (due == 0) spec.it_value.tv_nsec = 1;  // zero would disarm
  }
  if (timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    return Status(Code::kIo, "timerfd_settime: " + Errno(errno));
  }
  armed_ns_ = due;
  return Status::Ok();
}

Status DelayLine::Run() {
  epoll_event events[64];
  for (;;) {
    const int n = epoll_wait(epoll_.get(), events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(Code::kIo, "epoll_wait: " + Errno(errno));
    }
    const int64_t now = NowNs();
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kSignalTag) return Status::Ok();
      if (tag == kTimerTag) {
        uint64_t expirations = 0;
        if (read(timer_.get(), &expirations, sizeof expirations) < 0 && errno != EAGAIN) {
          return Status(Code::kIo, "reading the timerfd: " + Errno(errno));
        }
        armed_ns_ = -1;  // fired (or was re-armed to the same time: arm again, it costs nothing)
        continue;
      }
      RS_RETURN_IF_ERROR(ReadFrames(directions_[tag], now));
    }
    Flush();
    RS_RETURN_IF_ERROR(ArmTimer());
  }
}

std::string DelayLine::Summary() const {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  const double sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  uint64_t frames = 0, bytes = 0, drops = 0, errors = 0, left = 0;
  int64_t late_sum = 0, late_max = 0;
  std::string per;
  for (const Direction& d : directions_) {
    frames += d.frames;
    bytes += d.bytes;
    drops += d.drops;
    errors += d.write_errors;
    left += d.queue.size();
    late_sum += d.late_sum_ns;
    late_max = std::max(late_max, d.late_max_ns);
    per += "; " + d.name + " frames " + std::to_string(d.frames) + " bytes " + std::to_string(d.bytes) + " drops " +
           std::to_string(d.drops) + " max-queued " + std::to_string(d.max_queued_bytes);
    if (d.write_errors) {
      per += " write-errors " + std::to_string(d.write_errors) + " (" + Errno(d.last_write_errno) +
             (d.last_write_errno == EIO ? ": the receiving device was down" : "") + ")";
    }
  }
  const uint64_t written = frames + errors;
  char head[512];
  std::snprintf(head, sizeof head,
                "rs-delay-line: stopped; cpu user %.2f s sys %.2f s; delay %.3f ms; total frames %llu bytes %llu "
                "drops %llu write-errors %llu left-queued %llu; written after the due time by %.0f us on average, "
                "%.0f us at most",
                user, sys, options_.delay_ns / 1e6, static_cast<unsigned long long>(frames),
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(drops),
                static_cast<unsigned long long>(errors), static_cast<unsigned long long>(left),
                written ? static_cast<double>(late_sum) / written / 1e3 : 0.0, late_max / 1e3);
  return head + per;
}

// Written under a temporary name and renamed, so a reader never sees it half-written.
Status WriteReadyFile(const std::string& path) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return Status(Code::kIo, "--ready-file: cannot write " + tmp + ": " + Errno(errno));
  std::fprintf(f, "%d\n", static_cast<int>(getpid()));
  const bool ok = std::fclose(f) == 0;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status(Code::kIo, "--ready-file: cannot write " + path + ": " + Errno(errno));
  }
  return Status::Ok();
}

int Main(int argc, char** argv) {
  CLI::App app(
      "rs-delay-line: a fixed one-way delay on links between network namespaces, in user space (for kernels "
      "without netem). Each --pair creates two tap devices, one per namespace, and forwards frames between them "
      "after --delay, each direction. Needs root. Prints a ready line once every tap exists (and writes "
      "--ready-file), and a one-line summary when stopped by SIGTERM or SIGINT.");
  std::string delay_text, queue_text = "64MiB";
  std::vector<std::string> pair_texts;
  Options o;
  app.add_option("--delay", delay_text, "one-way delay per direction: 20ms, 500us, 0.02s (microseconds resolved)")
      ->type_name("DURATION")
      ->required();
  app.add_option("--pair", pair_texts,
                 "NETNS:IFNAME=NETNS:IFNAME: a tap in each namespace (a name from ip netns, or a path such as "
                 "/proc/PID/ns/net), joined by the delay; repeat for more links")
      ->type_name("NETNS:IF=NETNS:IF")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->required();
  app.add_option("--queue-limit", queue_text, "bytes one direction may hold; frames beyond it are dropped")
      ->type_name("SIZE")
      ->capture_default_str();
  app.add_option("--ready-file", o.ready_file, "written (with the pid) once every tap exists")->type_name("PATH");
  const Status parsed = ParseCommandLine(app, argc, argv);
  if (!parsed.ok()) {
    if (parsed.code() == Code::kCancelled) return 0;
    std::fprintf(stderr, "rs-delay-line: %s (see --help)\n", parsed.message().c_str());
    return 2;
  }
  auto bad_flag = [](const Status& s) {
    std::fprintf(stderr, "rs-delay-line: %s\n", s.message().c_str());
    return 2;
  };
  auto delay = ParseDelay(delay_text);
  if (!delay.ok()) return bad_flag(delay.status());
  o.delay_ns = *delay;
  auto limit = ParseSize(queue_text);
  if (!limit.ok()) return bad_flag(limit.status().Prefixed("--queue-limit"));
  if (*limit < 65536 + 1024) return bad_flag(Status(Code::kInvalidArgument, "--queue-limit must hold a 64 KiB frame"));
  o.queue_limit = *limit;
  std::vector<std::string> seen;
  for (const std::string& p : pair_texts) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos) {
      return bad_flag(Status(Code::kInvalidArgument, "--pair '" + p + "' has no '=' (NETNS:IFNAME=NETNS:IFNAME)"));
    }
    auto a = ParseEndpoint(p.substr(0, eq), p);
    if (!a.ok()) return bad_flag(a.status());
    auto b = ParseEndpoint(p.substr(eq + 1), p);
    if (!b.ok()) return bad_flag(b.status());
    for (const Endpoint* e : {&*a, &*b}) {
      for (const std::string& s : seen) {
        if (s == e->ToString()) return bad_flag(Status(Code::kInvalidArgument, "tap " + s + " named twice"));
      }
      seen.push_back(e->ToString());
    }
    o.pairs.emplace_back(std::move(*a), std::move(*b));
  }

  auto line = DelayLine::Create(o);
  if (!line.ok()) {
    std::fprintf(stderr, "rs-delay-line: %s\n", line.status().message().c_str());
    return 1;
  }
  if (!o.ready_file.empty()) {
    const Status ready = WriteReadyFile(o.ready_file);
    if (!ready.ok()) {
      std::fprintf(stderr, "rs-delay-line: %s\n", ready.message().c_str());
      return 1;
    }
  }
  std::printf("rs-delay-line: ready: %zu taps, delay %.3f ms each direction\n", (*line)->tap_count(), o.delay_ns / 1e6);
  std::fflush(stdout);
  const Status run = (*line)->Run();
  std::printf("%s\n", (*line)->Summary().c_str());
  std::fflush(stdout);
  if (!o.ready_file.empty()) unlink(o.ready_file.c_str());
  if (!run.ok()) {
    std::fprintf(stderr, "rs-delay-line: %s\n", run.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rs::delay_line

int main(int argc, char** argv) { return rs::delay_line::Main(argc, argv); }
