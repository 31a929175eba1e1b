#include "bench/netns/delay_line.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace rs::delay_line {

constexpr int64_t kMaxDelayNs = int64_t{60} * 1000 * 1000 * 1000;

StatusOr<int64_t> ParseDelay(const std::string& text) {
  const Status bad(Code::kInvalidArgument, "'" + text + "' is not a delay (examples: 20ms, 500us, 0.02s; at most 60s)");
  char* end = nullptr;
  const double n = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || !std::isfinite(n) || n < 0) return bad;
  const std::string unit(end);
  double ns = 0;
  if (unit == "us") {
    ns = n * 1e3;
  } else if (unit == "ms") {
    ns = n * 1e6;
  } else if (unit == "s") {
    ns = n * 1e9;
  } else if (!(unit.empty() && n == 0)) {
    return bad;
  }
  if (ns > static_cast<double>(kMaxDelayNs)) return bad;
  return static_cast<int64_t>(std::llround(ns / 1e3)) * 1000;
}

void Lateness::Add(int64_t ns) {
  int b = 0;
  for (int64_t us = ns / 1000; us > 0 && b < kBuckets - 1; us >>= 1) ++b;
  ++counts[b];
  sum_ns += ns;
  max_ns = std::max(max_ns, ns);
  ++total;
}

void Lateness::Merge(const Lateness& o) {
  for (int b = 0; b < kBuckets; ++b) counts[b] += o.counts[b];
  sum_ns += o.sum_ns;
  max_ns = std::max(max_ns, o.max_ns);
  total += o.total;
}

int64_t Lateness::QuantileUs(double q) const {
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (static_cast<double>(seen) >= q * static_cast<double>(total)) return b == 0 ? 1 : int64_t{1} << b;
  }
  return int64_t{1} << (kBuckets - 1);
}

namespace {

// A tap frame is at most 64 KiB plus the Ethernet header, after the
// virtio_net_hdr; a read that fills the whole buffer was truncated.
constexpr size_t kReadBuffer = 128 * 1024;
// struct virtio_net_hdr, the tap's default header (TUNSETVNETHDRSZ unset).
constexpr ssize_t kVnetHdrBytes = 10;
// Frames taken from one fd per wake-up, so one busy link cannot starve the others.
constexpr int kReadBatch = 64;
constexpr uint64_t kStopTag = ~uint64_t{0};
constexpr uint64_t kTimerTag = ~uint64_t{0} - 1;

std::string Errno(int err) { return std::strerror(err); }

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Frame {
  int64_t due_ns;
  std::vector<uint8_t> bytes;  // as read: virtio_net_hdr + Ethernet frame
};

struct Direction {
  int from = -1, to = -1;
  std::deque<Frame> queue;
  uint64_t queued_bytes = 0;
  DirectionStats stats;
};

}  // namespace

// The links one thread forwards: an epoll loop over their fds, the stop
// eventfd and a timerfd armed for the earliest frame due. Touched only by its
// thread between Start and join.
class Shard {
 public:
  static StatusOr<std::unique_ptr<Shard>> Create(const DelayLineOptions& o, int stop_fd) {
    std::unique_ptr<Shard> s(new Shard(o));
    s->epoll_ = Fd(epoll_create1(EPOLL_CLOEXEC));
    s->timer_ = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!s->epoll_.valid() || !s->timer_.valid()) return Status(Code::kIo, "epoll/timerfd: " + Errno(errno));
    RS_RETURN_IF_ERROR(s->Watch(stop_fd, kStopTag));
    RS_RETURN_IF_ERROR(s->Watch(s->timer_.get(), kTimerTag));
    return s;
  }

  // Adds both directions of a link; returns the index of a->b (b->a follows).
  StatusOr<size_t> AddLink(const LinkEnds& l) {
    const size_t first = directions_.size();
    for (int k = 0; k < 2; ++k) {
      Direction d;
      d.from = k == 0 ? l.a : l.b;
      d.to = k == 0 ? l.b : l.a;
      d.stats.name = k == 0 ? l.a_name + "->" + l.b_name : l.b_name + "->" + l.a_name;
      directions_.push_back(std::move(d));
      RS_RETURN_IF_ERROR(Watch(directions_.back().from, directions_.size() - 1));
    }
    return first;
  }

  // The thread's body: forwards until the stop fd is readable; on an error,
  // keeps it and makes `failed_fd` readable.
  void Run(int failed_fd) {
    status_ = Loop();
    if (!status_.ok()) {
      const uint64_t one = 1;
      (void)!write(failed_fd, &one, sizeof one);
    }
  }

  const Status& status() const { return status_; }
  DirectionStats Stats(size_t i) const {
    DirectionStats s = directions_[i].stats;
    s.left_queued = directions_[i].queue.size();
    return s;
  }

 private:
  explicit Shard(const DelayLineOptions& o) : options_(o), buffer_(kReadBuffer) {}

  Status Watch(int fd, uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return Status(Code::kIo, "epoll_ctl: " + Errno(errno));
    return Status::Ok();
  }

  Status Loop() {
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
        if (tag == kStopTag) return Status::Ok();
        if (tag == kTimerTag) {
          uint64_t expirations = 0;
          if (read(timer_.get(), &expirations, sizeof expirations) < 0 && errno != EAGAIN) {
            return Status(Code::kIo, "reading the timerfd: " + Errno(errno));
          }
          armed_ns_ = -1;  // fired: arm it again below
          continue;
        }
        RS_RETURN_IF_ERROR(ReadFrames(directions_[tag], now));
      }
      Flush();
      RS_RETURN_IF_ERROR(ArmTimer());
    }
  }

  Status ReadFrames(Direction& d, int64_t now) {
    for (int n = 0; n < kReadBatch; ++n) {
      const ssize_t got = read(d.from, buffer_.data(), buffer_.size());
      if (got < 0) {
        if (errno == EAGAIN || errno == EINTR) return Status::Ok();
        return Status(Code::kIo, "reading for " + d.stats.name + ": " + Errno(errno));
      }
      if (got < kVnetHdrBytes) continue;  // nothing a tap sends; nothing to forward
      if (static_cast<size_t>(got) == buffer_.size()) {
        return Status(Code::kInternal, "a frame of " + std::to_string(got) + "+ bytes for " + d.stats.name +
                                           " did not fit the read buffer (GSO larger than 64 KiB?)");
      }
      const auto len = static_cast<uint64_t>(got);
      if (d.queued_bytes + len > options_.queue_limit) {
        ++d.stats.drops;
        d.stats.drop_bytes += len;
        continue;
      }
      d.queue.push_back(Frame{now + options_.delay_ns, std::vector<uint8_t>(buffer_.begin(), buffer_.begin() + got)});
      d.queued_bytes += len;
      d.stats.max_queued_bytes = std::max(d.stats.max_queued_bytes, d.queued_bytes);
    }
    return Status::Ok();
  }

  // Writes every frame that is due.
  void Flush() {
    int64_t now = NowNs();
    for (Direction& d : directions_) {
      while (!d.queue.empty() && d.queue.front().due_ns <= now) {
        const Frame& f = d.queue.front();
        d.stats.late.Add(now - f.due_ns);
        const ssize_t put = write(d.to, f.bytes.data(), f.bytes.size());
        if (put == static_cast<ssize_t>(f.bytes.size())) {
          ++d.stats.frames;
          d.stats.bytes += f.bytes.size();
        } else {
          ++d.stats.write_errors;  // e.g. the receiving device is down: a lost frame, as on a wire
          d.stats.last_write_errno = put < 0 ? errno : EIO;
        }
        d.queued_bytes -= f.bytes.size();
        d.queue.pop_front();
        now = NowNs();  // the write ran the receiving side's stack: time has passed
      }
    }
  }

  Status ArmTimer() {
    int64_t due = -1;
    for (const Direction& d : directions_) {
      if (!d.queue.empty() && (due < 0 || d.queue.front().due_ns < due)) due = d.queue.front().due_ns;
    }
    if (due == armed_ns_) return Status::Ok();
    itimerspec spec{};  // all zero: disarmed
    if (due >= 0) {
      spec.it_value.tv_sec = due / 1000000000;
      spec.it_value.tv_nsec = std::max<int64_t>(due % 1000000000, due == 0 ? 1 : 0);  // zero would disarm
    }
    if (timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
      return Status(Code::kIo, "timerfd_settime: " + Errno(errno));
    }
    armed_ns_ = due;
    return Status::Ok();
  }

  const DelayLineOptions options_;
  Fd epoll_, timer_;
  std::vector<Direction> directions_;
  int64_t armed_ns_ = -1;
  std::vector<uint8_t> buffer_;
  Status status_;
};

StatusOr<std::unique_ptr<DelayLine>> DelayLine::Create(const DelayLineOptions& o, const std::vector<LinkEnds>& links) {
  if (links.empty()) return Status(Code::kInvalidArgument, "no links to delay");
  if (o.threads < 1) return Status(Code::kInvalidArgument, "threads must be at least 1");
  if (o.delay_ns < 0 || o.delay_ns > kMaxDelayNs) return Status(Code::kInvalidArgument, "delay out of range");
  std::unique_ptr<DelayLine> line(new DelayLine());
  line->options_ = o;
  line->stop_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  line->failed_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!line->stop_.valid() || !line->failed_.valid()) return Status(Code::kIo, "eventfd: " + Errno(errno));
  const size_t shards = std::min(links.size(), static_cast<size_t>(o.threads));
  for (size_t i = 0; i < shards; ++i) {
    auto shard = Shard::Create(o, line->stop_.get());
    if (!shard.ok()) return shard.status();
    line->shards_.push_back(std::move(*shard));
  }
  // Round robin: the harness lists workers first, then reducers, and every
  // frame crosses one of each, so neighbours go to different threads.
  for (size_t k = 0; k < links.size(); ++k) {
    const size_t s = k % shards;
    auto first = line->shards_[s]->AddLink(links[k]);
    if (!first.ok()) return first.status();
    line->link_slots_.emplace_back(static_cast<int>(s), static_cast<int>(*first));
  }
  return line;
}

DelayLine::~DelayLine() { StopAndJoin(); }

void DelayLine::StopAndJoin() {
  if (threads_.empty()) return;
  const uint64_t one = 1;
  (void)!write(stop_.get(), &one, sizeof one);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

Status DelayLine::Run(int stop_fd) {
  if (!threads_.empty()) return Status(Code::kInternal, "DelayLine::Run called twice");
  for (auto& shard : shards_) {
    Shard* s = shard.get();
    const int failed = failed_.get();
    threads_.emplace_back([s, failed] { s->Run(failed); });
    if (options_.rt_priority > 0) {
      sched_param p{};
      p.sched_priority = options_.rt_priority;
      const int err = pthread_setschedparam(threads_.back().native_handle(), SCHED_FIFO, &p);
      if (err != 0 && options_.warn && threads_.size() == 1) {
        options_.warn("cannot run the forwarding threads at SCHED_FIFO priority " +
                      std::to_string(options_.rt_priority) + " (" + Errno(err) +
                      "); they run as ordinary threads, and frames may leave late when the machine is busy");
      }
    }
  }
  Fd epoll(epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev{};
  ev.events = EPOLLIN;
  Status result;
  if (!epoll.valid() || epoll_ctl(epoll.get(), EPOLL_CTL_ADD, stop_fd, &ev) != 0 ||
      epoll_ctl(epoll.get(), EPOLL_CTL_ADD, failed_.get(), &ev) != 0) {
    result = Status(Code::kIo, "epoll: " + Errno(errno));
  } else {
    while (epoll_wait(epoll.get(), &ev, 1, -1) < 0 && errno == EINTR) {
    }
  }
  StopAndJoin();
  for (const auto& shard : shards_) {
    if (result.ok() && !shard->status().ok()) result = shard->status();
  }
  return result;
}

std::vector<DirectionStats> DelayLine::Stats() const {
  std::vector<DirectionStats> out;
  for (const auto& [shard, first] : link_slots_) {
    out.push_back(shards_[shard]->Stats(first));
    out.push_back(shards_[shard]->Stats(first + 1));
  }
  return out;
}

}  // namespace rs::delay_line
