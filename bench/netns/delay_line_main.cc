// rs-delay-line: a link delay in user space for the network-namespace harness
// (bench/netns/netns_lib.sh) on kernels without the netem qdisc. For each
// --pair it creates two tap devices, one in each named network namespace
// (e.g. eth0 in a host, p0 in the switch), and forwards every frame read from
// one tap to the other after a fixed one-way delay, both directions
// (delay_line.h). The taps take whole GSO frames (up to 64 KiB) with their
// virtio_net_hdr, passed on unchanged, so checksum and segmentation offload
// survive.
//
// It prints a ready line (and writes --ready-file) once every tap exists,
// stops on SIGTERM, SIGINT or its parent's exit (so a harness killed with
// SIGKILL leaves no delay line holding its namespaces), and then prints a
// one-line summary. Exit status: 0 when stopped, 1 on a failure (named on
// stderr), 2 for bad flags.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/netns/delay_line.h"
#include "bench/netns/tap_device.h"
#include "common/cli_parse.h"
#include "common/status.h"
#include "common/units.h"

namespace rs::delay_line {
namespace {

StatusOr<Endpoint> ParseEndpoint(const std::string& text, const std::string& pair) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return Status(Code::kInvalidArgument,
                  "--pair '" + pair + "': each side must be NETNS:IFNAME (example: rsb1-h0:eth0=rsb1-sw:p0)");
  }
  Endpoint e{text.substr(0, colon), text.substr(colon + 1)};
  if (e.ifname.size() > 15 || e.ifname.find('/') != std::string::npos) {
    return Status(Code::kInvalidArgument,
                  "--pair '" + pair + "': '" + e.ifname + "' is not a device name (at most 15 characters, no '/')");
  }
  return e;
}

StatusOr<std::vector<std::pair<Endpoint, Endpoint>>> ParsePairs(const std::vector<std::string>& texts) {
  std::vector<std::pair<Endpoint, Endpoint>> pairs;
  std::vector<std::string> seen;
  for (const std::string& p : texts) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos) {
      return Status(Code::kInvalidArgument, "--pair '" + p + "' has no '=' (NETNS:IFNAME=NETNS:IFNAME)");
    }
    auto a = ParseEndpoint(p.substr(0, eq), p);
    if (!a.ok()) return a.status();
    auto b = ParseEndpoint(p.substr(eq + 1), p);
    if (!b.ok()) return b.status();
    for (const Endpoint* e : {&*a, &*b}) {
      for (const std::string& s : seen) {
        if (s == e->ToString()) return Status(Code::kInvalidArgument, "tap " + s + " is named twice");
      }
      seen.push_back(e->ToString());
    }
    pairs.emplace_back(std::move(*a), std::move(*b));
  }
  return pairs;
}

// SIGTERM and SIGINT (and the parent's exit, as SIGTERM) as a readable fd.
// A background job of a non-interactive shell starts with SIGINT ignored, and
// an ignored signal is never queued: restore the default before blocking.
// Blocked here, before any thread exists, so that every thread inherits the mask.
StatusOr<Fd> StopSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && getppid() != parent) raise(SIGTERM);  // already gone
  Fd fd(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd.valid()) return Status(Code::kIo, std::string("signalfd: ") + std::strerror(errno));
  return fd;
}

// Written under a temporary name and renamed, so a reader never sees it half-written.
Status WriteReadyFile(const std::string& path) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return Status(Code::kIo, "--ready-file: cannot write " + tmp + ": " + std::strerror(errno));
  std::fprintf(f, "%d\n", static_cast<int>(getpid()));
  const bool ok = std::fclose(f) == 0;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status(Code::kIo, "--ready-file: cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

std::string Summary(const std::vector<DirectionStats>& stats, int64_t delay_ns, int threads) {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  const double sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  unsigned long long frames = 0, bytes = 0, drops = 0, errors = 0, left = 0;
  Lateness late;
  std::string per;
  for (const DirectionStats& d : stats) {
    frames += d.frames;
    bytes += d.bytes;
    drops += d.drops;
    errors += d.write_errors;
    left += d.left_queued;
    late.Merge(d.late);
    per += "; " + d.name + " frames " + std::to_string(d.frames) + " bytes " + std::to_string(d.bytes) + " drops " +
           std::to_string(d.drops) + " max-queued " + std::to_string(d.max_queued_bytes);
    if (d.write_errors) {
      per += " write-errors " + std::to_string(d.write_errors) + " (" + std::strerror(d.last_write_errno) +
             (d.last_write_errno == EIO ? ": the receiving device was down" : "") + ")";
    }
  }
  char head[512];
  std::snprintf(head, sizeof head,
                "rs-delay-line: stopped; cpu user %.2f s sys %.2f s; %d thread(s); delay %.3f ms; total frames %llu "
                "bytes %llu drops %llu write-errors %llu left-queued %llu; written after the due time by %.0f us "
                "on average (median < %lld us, 99th percentile < %lld us), %.0f us at most",
                user, sys, threads, delay_ns / 1e6, frames, bytes, drops, errors, left,
                late.total ? static_cast<double>(late.sum_ns) / static_cast<double>(late.total) / 1e3 : 0.0,
                static_cast<long long>(late.QuantileUs(0.5)), static_cast<long long>(late.QuantileUs(0.99)),
                late.max_ns / 1e3);
  return head + per;
}

int Fail(const Status& s, int code) {
  std::fprintf(stderr, "rs-delay-line: %s\n", s.message().c_str());
  return code;
}

int Main(int argc, char** argv) {
  CLI::App app(
      "rs-delay-line: a fixed one-way delay on links between network namespaces, in user space (for kernels "
      "without netem). Each --pair creates two tap devices, one per namespace, and forwards frames between them "
      "after --delay, each direction. Needs root. Prints a ready line once every tap exists (and writes "
      "--ready-file), and a one-line summary when stopped by SIGTERM, SIGINT or its parent's exit.");
  std::string delay_text, queue_text = "64MiB", ready_file;
  std::vector<std::string> pair_texts;
  int threads = 0, rt_priority = 1;
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
  app.add_option("--threads", threads,
                 "forwarding threads, links spread over them (0: one per CPU, at most one "
                 "per link)")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--rt-priority", rt_priority,
                 "SCHED_FIFO priority of the forwarding threads (0: ordinary scheduling); they stand in for the "
                 "kernel's packet processing, which runs ahead of processes")
      ->type_name("N")
      ->check(CLI::Range(0, 99))
      ->capture_default_str();
  app.add_option("--ready-file", ready_file, "written (with the pid) once every tap exists")->type_name("PATH");
  const Status parsed = ParseCommandLine(app, argc, argv);
  if (!parsed.ok()) {
    if (parsed.code() == Code::kCancelled) return 0;
    return Fail(Status(parsed.code(), parsed.message() + " (see --help)"), 2);
  }
  auto delay = ParseDelay(delay_text);
  if (!delay.ok()) return Fail(delay.status().Prefixed("--delay"), 2);
  auto limit = ParseSize(queue_text);
  if (!limit.ok()) return Fail(limit.status().Prefixed("--queue-limit"), 2);
  if (*limit < 65536 + 1024) return Fail(Status(Code::kInvalidArgument, "--queue-limit must hold a 64 KiB frame"), 2);
  if (threads < 0) return Fail(Status(Code::kInvalidArgument, "--threads must be 0 (automatic) or more"), 2);
  auto pairs = ParsePairs(pair_texts);
  if (!pairs.ok()) return Fail(pairs.status(), 2);

  // Every tap first, while this is the only thread: setns switches the calling thread only.
  Fd home(open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!home.valid()) return Fail(Status(Code::kIo, std::string("/proc/self/ns/net: ") + std::strerror(errno)), 1);
  std::vector<Fd> taps;
  std::vector<LinkEnds> links;
  for (const auto& [a, b] : *pairs) {
    for (const Endpoint* e : {&a, &b}) {
      auto tap = OpenTap(home.get(), *e);
      if (!tap.ok()) return Fail(tap.status(), 1);
      taps.push_back(std::move(*tap));
    }
    links.push_back(LinkEnds{taps[taps.size() - 2].get(), taps.back().get(), a.ToString(), b.ToString()});
  }
  auto stop = StopSignals();
  if (!stop.ok()) return Fail(stop.status(), 1);

  DelayLineOptions o;
  o.delay_ns = *delay;
  o.queue_limit = *limit;
  o.threads = threads > 0 ? threads : std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  o.rt_priority = rt_priority;
  o.warn = [](const std::string& w) { std::fprintf(stderr, "rs-delay-line: warning: %s\n", w.c_str()); };
  auto line = DelayLine::Create(o, links);
  if (!line.ok()) return Fail(line.status(), 1);
  if (!ready_file.empty()) {
    const Status ready = WriteReadyFile(ready_file);
    if (!ready.ok()) return Fail(ready, 1);
  }
  std::printf("rs-delay-line: ready: %zu taps, %d thread(s), delay %.3f ms each direction\n", taps.size(),
              (*line)->threads(), o.delay_ns / 1e6);
  std::fflush(stdout);
  const Status run = (*line)->Run(stop->get());
  std::printf("%s\n", Summary((*line)->Stats(), o.delay_ns, (*line)->threads()).c_str());
  std::fflush(stdout);
  if (!ready_file.empty()) unlink(ready_file.c_str());
  return run.ok() ? 0 : Fail(run, 1);
}

}  // namespace
}  // namespace rs::delay_line

int main(int argc, char** argv) { return rs::delay_line::Main(argc, argv); }
