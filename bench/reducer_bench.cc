// reducer-bench: all-reduce bandwidth and correctness against a set of
// reducers, in the style of nccl-tests' all_reduce_perf. Run one process per
// rank. Every rank checks every element of its results (--check 1); rank 0
// prints the table. --pattern collnet and ddp replay the traffic NCCL's
// CollNet proxy and PyTorch DDP send instead of the sweep (workload_runs.h).
// Exit status: 0 when every operation succeeded and every checked element
// was right, 1 otherwise, 2 for bad flags.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_check.h"
#include "bench/bench_options.h"
#include "bench/workload_flags.h"
#include "bench/workload_runs.h"
#include "client/client.h"
#include "client/transport_plan.h"
#include "common/tcp_tuning.h"
#include "common/units.h"
#include "protocol/auth.h"

namespace rs::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Sizes from min to max, multiplied by the step factor each time.
std::vector<uint64_t> Sizes(const Options& o) {
  std::vector<uint64_t> out;
  for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
    out.push_back(bytes);
    if (bytes > o.max_bytes / o.step_factor) break;  // the next step would pass max (or overflow)
  }
  return out;
}

struct Row {
  DataType dtype = DataType::kFloat32;
  size_t count = 0;
  uint64_t bytes = 0;
  double time_us = 0;  // the slowest rank's average per operation
  uint64_t wrong = 0;  // summed over ranks
};

// Rank 0's table and CSV; every rank keeps the totals, which are the same on
// every rank because they come from all-reduced values.
class Report {
 public:
  explicit Report(const Options& o) : o_(o), print_(o.rank == 0) {}

  Status OpenCsv() {
    if (!print_ || o_.csv.empty()) return Status::Ok();
    csv_.open(o_.csv);
    if (!csv_) return Status(Code::kIo, "--csv: cannot write " + o_.csv);
    csv_ << "bytes,count,dtype,op,ranks,reducers,time_us,algbw_GBps,busbw_GBps,wrong\n";
    return Status::Ok();
  }

  void Preamble() const {
    if (!print_) return;
    std::string list;
    for (const auto& r : o_.reducers) list += (list.empty() ? "" : ",") + r.ToString();
    std::printf("# reducer-bench: %u ranks, %zu reducers (%s), session '%s'\n", o_.world, o_.reducers.size(),
                list.c_str(), o_.session.c_str());
    const client::ClientOptions& c = o_.client;
    const std::string streams = c.streams_per_reducer ? std::to_string(*c.streams_per_reducer) : "auto";
    const std::string piece = c.max_piece_bytes ? FormatBytes(*c.max_piece_bytes) : "auto";
    const std::string window =
        !c.send_window_bytes ? "auto" : *c.send_window_bytes ? FormatBytes(*c.send_window_bytes) : "unlimited";
    const std::string threads = c.io_threads ? std::to_string(*c.io_threads) : "auto";
    TcpTuning tcp = c.tcp;  // pacing as the client will decide it
    tcp.pacing = c.tcp_pacing.value_or(client::AutoTcpPacing(
        o_.world, c.streams_per_reducer.value_or(client::AutoStreams(static_cast<uint32_t>(c.reducers.size())))));
    std::printf("# %s stream(s) per reducer, pieces up to %s, send window %s, %d operation(s) in flight, "
                "%s I/O thread(s)\n",
                streams.c_str(), piece.c_str(), window.c_str(), o_.inflight, threads.c_str());
    std::printf("# iters %d, warmup %d, check %s, job token %s\n", o_.iters, o_.warmup, o_.check ? "on" : "off",
                o_.job_token.empty() ? "none" : "set");
    std::printf("# liveness timeout %lld ms, CRC32C %s, wire %s, failover %s\n",
                static_cast<long long>(c.liveness_timeout.count()), c.crc ? "on" : "off",
                std::string(protocol::WireTypeName(c.wire_dtype)).c_str(),
                c.failover ? ("on (min " + std::to_string(c.min_reducers) + " reducers, retention " +
                              FormatBytes(c.retention_bytes) + ")").c_str()
                           : "off");
    std::printf("# %s\n", ProbeTcpTuning(tcp).Describe().c_str());
    std::printf("# waiting for all %u ranks to join...\n", o_.world);
    std::fflush(stdout);
  }

  void TableHeader() const {
    if (!print_) return;
    std::printf(
        "#\n"
        "# algbw = size / time: compare it with the line rate. busbw = algbw * 2(n-1)/n is the nccl-tests\n"
        "# convention for peer-to-peer (ring) all-reduce; with reducers each rank sends and receives the\n"
        "# size only once, so busbw reads above the line rate. It is here for comparison only.\n"
        "#\n"
        "#%14s %12s %9s %6s %11s %12s %12s %8s\n"
        "#%14s %12s %9s %6s %11s %12s %12s %8s\n",
        "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "(B)", "(elements)", "", "", "(us)",
        "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  void Add(const Row& row) {
    const double algbw = static_cast<double>(row.bytes) / row.time_us / 1e3;  // bytes/us/1e3 = GB/s
    const double busbw = algbw * 2.0 * (o_.world - 1) / o_.world;
    ++rows_;
    wrong_ += row.wrong;
    algbw_sum_ += algbw;
    if (!print_) return;
    const std::string wrong = o_.check ? std::to_string(row.wrong) : "N/A";
    const std::string_view type = DataTypeName(row.dtype), op = ReduceOpName(o_.op);
    std::printf(" %14llu %12zu %9.*s %6.*s %11.1f %12.3f %12.3f %8s\n", static_cast<unsigned long long>(row.bytes),
                row.count, static_cast<int>(type.size()), type.data(), static_cast<int>(op.size()), op.data(),
                row.time_us, algbw, busbw, wrong.c_str());
    std::fflush(stdout);
    if (csv_.is_open()) {
      csv_ << row.bytes << ',' << row.count << ',' << type << ',' << op << ',' << o_.world << ','
           << o_.reducers.size() << ',' << row.time_us << ',' << algbw << ',' << busbw << ',' << row.wrong << '\n'
           << std::flush;
    }
  }

  // Prints the summary; returns true when every checked element was right.
  bool Finish(uint64_t input_bytes) const {
    if (print_) {
      std::printf("#\n# Wrong elements : %llu %s\n", static_cast<unsigned long long>(wrong_),
                  !o_.check ? "(not checked)" : wrong_ == 0 ? "OK" : "FAILED");
      std::printf("# Avg algbw      : %.3f GB/s over %d results\n", rows_ ? algbw_sum_ / rows_ : 0.0, rows_);
      std::printf("# Input bytes    : %llu per rank (all operations, warm-up included)\n",
                  static_cast<unsigned long long>(input_bytes));
      std::fflush(stdout);
    }
    return wrong_ == 0;
  }

 private:
  const Options& o_;
  const bool print_;
  std::ofstream csv_;
  int rows_ = 0;
  uint64_t wrong_ = 0;
  double algbw_sum_ = 0;
};

// What the client chose (or was told): the automatic window moves with the
// path, so it is reported as the streams' range at the end of the run.
void PrintTransport(const client::ClientStats& st) {
  auto window = [](size_t w) { return w ? FormatBytes(w) : std::string("unlimited"); };
  std::printf("# Transport      : %d I/O thread(s), %d stream(s) per reducer, pieces of %s", st.io_threads,
              st.streams_per_reducer, FormatBytes(st.piece_bytes).c_str());
  if (st.min_piece_bytes < st.piece_bytes) {
    std::printf(" (small operations down to %s)", FormatBytes(st.min_piece_bytes).c_str());
  }
  std::printf(", send window %s", window(st.send_window_min).c_str());
  if (st.send_window_max != st.send_window_min) std::printf(" to %s", window(st.send_window_max).c_str());
  std::printf(", TCP %s", st.tcp_paced ? "paced" : "not paced");
  // Small operations over many reducers (client/transport_plan.h).
  if (st.writes_cut_small > 0) {
    std::printf(", %llu write(s) cut to an eighth of an operation's share",
                static_cast<unsigned long long>(st.writes_cut_small));
  }
  std::printf("\n");
  // Rank 0's streams only: a buffer ceiling below the path's bandwidth-delay
  // product shows up here (the client also logs a warning).
  if (st.tcp_busy_us > 0) {
    const double busy = static_cast<double>(st.tcp_busy_us);
    std::printf("# TCP waits      : %.1f s with pieces to send (all streams), %.1f %% of it for a reducer's "
                "receive window, %.1f %% for room in the send buffer\n",
                busy / 1e6, 100.0 * static_cast<double>(st.tcp_rwnd_limited_us) / busy,
                100.0 * static_cast<double>(st.tcp_sndbuf_limited_us) / busy);
  }
  std::fflush(stdout);
}

class Bench {
 public:
  // Allocates every buffer up front, so a rank without the memory fails
  // before it joins the session rather than in the middle of it.
  explicit Bench(Options o) : o_(std::move(o)), report_(o_), seeds_(o_.inflight) {
    if (o_.workload.pattern != Pattern::kSweep) {
      workload_ = WorkloadRun::Create(o_.workload, {o_.rank, o_.world, o_.reducers.size(), o_.dtypes, o_.op, o_.iters,
                                                    o_.warmup, o_.check, o_.client.op_timeout, o_.csv, Sizes(o_),
                                                    o_.client.wire_dtype});
      return;
    }
    for (int s = 0; s < o_.inflight; ++s) {
      send_.emplace_back(o_.max_bytes);
      recv_.emplace_back(o_.max_bytes);
    }
  }

  Status Start() {
    if (!workload_) RS_RETURN_IF_ERROR(report_.OpenCsv());
    report_.Preamble();
    if (workload_) workload_->Describe();
    client::ClientOptions c = o_.client;
    c.reducers = o_.reducers;
    c.session = protocol::SessionIdFromName(o_.session);
    c.rank = o_.rank;
    c.world = o_.world;
    c.job_token = o_.job_token;
    // Errors come back as statuses and are printed with their context; the
    // log adds warnings, and with --verbose what the client chose and did.
    const client::LogLevel least = o_.verbose ? client::LogLevel::kInfo : client::LogLevel::kWarn;
    c.log = [least](client::LogLevel level, const std::string& message) {  // the message names the rank
      if (level >= least && level != client::LogLevel::kError) {
        std::fprintf(stderr, "reducer-bench: %s\n", message.c_str());
      }
    };
    auto client = client::Client::Create(std::move(c));
    if (!client.ok()) return client.status().Prefixed("joining the session");
    client_ = std::move(*client);
    return Status::Ok();
  }

  // Runs the sweep; returns the process exit status.
  int Run() {
    if (workload_) {
      const int rc = workload_->Run(*client_);
      if (o_.rank == 0) PrintTransport(client_->stats());
      PrintFailover();
      return rc;
    }
    report_.TableHeader();
    for (DataType dtype : o_.dtypes) {
      for (uint64_t size : Sizes(o_)) {
        Row row{dtype, size / DataTypeSize(dtype)};
        if (row.count == 0) continue;  // below one element
        row.bytes = row.count * DataTypeSize(dtype);
        if (Status st = RunSize(&row); !st.ok()) {
          std::fprintf(stderr, "reducer-bench: rank %u: %s failed: %s\n", o_.rank, Describe(row).c_str(),
                       st.ToString().c_str());
          return 1;
        }
        report_.Add(row);
        PrintOpTimes();
      }
    }
    const bool right = report_.Finish(input_bytes_);
    if (o_.rank == 0) PrintTransport(client_->stats());
    PrintFailover();
    return right ? 0 : 1;
  }

 private:
  // Rank 0's failover figures. Operations that waited for retention memory
  // mean the ring (--retention) was too small for what was in flight, or the
  // other ranks lagged: each wait holds an operation back for a round trip.
  void PrintFailover() {
    if (o_.rank != 0 || !o_.client.failover) return;
    const client::ClientStats st = client_->stats();
    std::printf("# Failover       : epoch %u, %zu of %zu reducers live, %llu operations redone, retained peak %s, "
                "%llu operations waited for retention memory\n",
                st.epoch, st.live_reducers, o_.reducers.size(), static_cast<unsigned long long>(st.operations_redone),
                FormatBytes(st.retained_peak_bytes).c_str(), static_cast<unsigned long long>(st.retention_waits));
    std::fflush(stdout);
  }

  Status RunSize(Row* row) {
    // The warm-up runs right before the clock starts, as gloo_allreduce.py's
    // does. Checking it in between idled every stream for as long as the
    // check took (about a second at 64 MiB); a stream idle for longer than
    // its retransmission timeout resumes with its congestion window halved
    // for each of them (tcp_slow_start_after_idle), and the first timed
    // operation paid for the ramp (0.12 s of 1.6 - 3.1 s at 200 Mbit/s + 20 ms).
    PrepareInputs(*row);
    uint64_t barrier = 0;  // every rank starts its warm-up when the slowest is ready
    RS_RETURN_IF_ERROR(AllReduceScalar(&barrier, DataType::kUint64, ReduceOp::kSum));
    RS_RETURN_IF_ERROR(RunOps(*row, o_.warmup));
    // The same inputs, the results' buffers filled again with the pattern no
    // result has: a timed operation that leaves a warm-up result behind is caught.
    RearmResults(*row);
    const auto start = Clock::now();
    op_ms_.clear();
    RS_RETURN_IF_ERROR(RunOps(*row, o_.iters, o_.op_times ? &op_ms_ : nullptr));
    double time_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / o_.iters;
    CheckResult found;
    CheckResults(*row, o_.iters, &found);
    if (found.wrong > 0) {
      std::fprintf(stderr, "reducer-bench: rank %u: %s: %llu wrong elements; first: %s\n", o_.rank,
                   Describe(*row).c_str(), static_cast<unsigned long long>(found.wrong), found.first_wrong.c_str());
    }
    uint64_t wrong = found.wrong;
    RS_RETURN_IF_ERROR(AllReduceScalar(&time_us, DataType::kFloat64, ReduceOp::kMax));
    RS_RETURN_IF_ERROR(AllReduceScalar(&wrong, DataType::kUint64, ReduceOp::kSum));
    row->time_us = time_us;
    row->wrong = wrong;
    return Status::Ok();
  }

  // "float32 sum of 4 KiB (1024 elements)", for error messages.
  std::string Describe(const Row& row) const {
    return std::string(DataTypeName(row.dtype)) + " " + std::string(ReduceOpName(o_.op)) + " of " +
           FormatBytes(row.bytes) + " (" + std::to_string(row.count) + " elements)";
  }

  CheckParams Params(const Row& row, int slot) const {
    return {row.dtype, o_.op, o_.world, seeds_[slot], o_.client.wire_dtype};
  }

  void PrepareInputs(const Row& row) {
    for (int s = 0; s < o_.inflight; ++s) {
      seeds_[s] = next_seed_++;  // same sequence on every rank
      FillInput(Params(row, s), o_.rank, send_[s].data(), row.count);
      // No exact result has this pattern in a float type (a tiny negative
      // value), so an element the reduction never wrote shows up as wrong.
      std::memset(recv_[s].data(), 0xA5, row.bytes);
    }
  }

  void RearmResults(const Row& row) {
    if (!o_.check || o_.warmup == 0) return;
    for (auto& recv : recv_) std::memset(recv.data(), 0xA5, row.bytes);
  }

  // Keeps up to --inflight operations going, slot i % inflight for the i-th.
  // gaps_ms: where given, the time from the call (or the last wait's end) to
  // each wait's end, in the order waited for.
  Status RunOps(const Row& row, int ops, std::vector<double>* gaps_ms = nullptr) {
    auto last = Clock::now();
    auto wait = [&](client::Operation& op) {
      Status st = Await(op);
      if (gaps_ms && st.ok()) {
        const auto now = Clock::now();
        gaps_ms->push_back(std::chrono::duration<double, std::milli>(now - last).count());
        last = now;
      }
      return st;
    };
    std::vector<std::shared_ptr<client::Operation>> slots(o_.inflight);
    for (int i = 0; i < ops; ++i) {
      const int s = i % o_.inflight;
      if (slots[s]) RS_RETURN_IF_ERROR(wait(*slots[s]));
      slots[s] = client_->AllReduce(send_[s].data(), recv_[s].data(), row.count, row.dtype, o_.op);
      input_bytes_ += row.bytes;
    }
    for (auto& op : slots) {
      if (op) RS_RETURN_IF_ERROR(wait(*op));
    }
    return Status::Ok();
  }

  // --op-times: rank 0's last size, one operation at a time. The first timed
  // operation apart: it shows what the warm-up left (a window still growing).
  // Up to kListedOps, each in order too: a one-time cost (a buffer's first
  // pass) shows as the one slow operation, wherever it falls.
  void PrintOpTimes() const {
    constexpr size_t kListedOps = 50;
    if (o_.rank != 0 || op_ms_.empty()) return;
    std::printf("#   rank 0, %zu timed operation(s): the first %.1f ms", op_ms_.size(), op_ms_.front());
    if (op_ms_.size() > 1) {
      std::vector<double> rest(op_ms_.begin() + 1, op_ms_.end());
      std::sort(rest.begin(), rest.end());
      std::printf(", the others %.1f - %.1f ms (median %.1f ms)", rest.front(), rest.back(), rest[rest.size() / 2]);
    }
    if (op_ms_.size() <= kListedOps) {
      std::printf("; in order:");
      for (double ms : op_ms_) std::printf(" %.1f", ms);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  // Verifies the buffers the last batch used, adding to what this size found.
  void CheckResults(const Row& row, int ops, CheckResult* found) const {
    if (!o_.check) return;
    for (int s = 0; s < std::min(ops, o_.inflight); ++s) {
      CheckResult r = VerifyResult(Params(row, s), recv_[s].data(), row.count);
      if (found->wrong == 0) found->first_wrong = std::move(r.first_wrong);
      found->wrong += r.wrong;
    }
  }

  // Reduces one 8-byte value through a member, not the caller's variable, so
  // that even an operation abandoned after a failed wait never writes to a
  // dead stack frame.
  template <typename T>
  Status AllReduceScalar(T* value, DataType dtype, ReduceOp op) {
    static_assert(sizeof(T) == sizeof(scalar_));
    std::memcpy(&scalar_, value, sizeof(T));
    RS_RETURN_IF_ERROR(Await(*client_->AllReduce(&scalar_, &scalar_, 1, dtype, op)));
    std::memcpy(value, &scalar_, sizeof(T));
    return Status::Ok();
  }

  Status Await(client::Operation& op) const {
    // The client fails an operation itself after --op-timeout; the margin
    // only keeps a bug there from hanging the benchmark.
    return op.Wait(o_.client.op_timeout + std::chrono::seconds(10));
  }

  const Options o_;
  Report report_;
  std::vector<std::vector<std::byte>> send_, recv_;  // one pair per operation in flight
  std::vector<uint64_t> seeds_;                      // the inputs' seed, per pair
  uint64_t next_seed_ = 1;
  std::vector<double> op_ms_;  // --op-times: the last size's timed operations, as RunOps measured them
  uint64_t scalar_ = 0;  // AllReduceScalar's buffer
  uint64_t input_bytes_ = 0;  // handed to AllReduce by the sweep, for CPU per byte
  std::unique_ptr<WorkloadRun> workload_;   // --pattern collnet or ddp, with their buffers
  std::unique_ptr<client::Client> client_;  // last: stops its I/O before the buffers go
};

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  auto options = rs::bench::ParseOptions(argc, argv);
  if (!options.ok()) {
    if (options.status().code() == rs::Code::kCancelled) return 0;
    std::fprintf(stderr, "reducer-bench: %s\nRun 'reducer-bench --help' for the flags.\n",
                 options.status().message().c_str());
    return 2;
  }
  for (const std::string& notice : options->notices) {
    std::fprintf(stderr, "reducer-bench: warning: %s\n", notice.c_str());
  }
  const uint32_t rank = options->rank;
  std::unique_ptr<rs::bench::Bench> bench;
  try {
    bench = std::make_unique<rs::bench::Bench>(std::move(*options));
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "reducer-bench: rank %u: cannot allocate the buffers (2 x --inflight x --max-bytes; "
                 "--pattern ddp: 2 x --ddp-model)\n", rank);
    return 1;
  }
  if (rs::Status st = bench->Start(); !st.ok()) {
    std::fprintf(stderr, "reducer-bench: rank %u: %s\n", rank, st.ToString().c_str());
    return 1;
  }
  return bench->Run();
}
