#include "bench/workload_runs.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

#include "bench/bench_check.h"
#include "common/units.h"

namespace rs::bench {
namespace {

using Clock = std::chrono::steady_clock;

// What the patterns have in common: the buffers, the checks, the scalar
// all-reduces that time and count across ranks, the summary.
class RunBase : public WorkloadRun {
 protected:
  RunBase(const RunSettings& s, uint64_t buffer_bytes) : s_(s), send_(buffer_bytes), recv_(buffer_bytes) {}

  Status OpenCsv(const char* header) {
    if (s_.rank != 0 || s_.csv.empty()) return Status::Ok();
    csv_.open(s_.csv);
    if (!csv_) return Status(Code::kIo, "--csv: cannot write " + s_.csv);
    csv_ << header << '\n' << std::flush;
    return Status::Ok();
  }

  CheckParams Params(DataType dtype, uint64_t seed) const { return {dtype, s_.op, s_.world, seed, s_.wire}; }

  // The inputs of elements [offset, offset + count) with their own seed; the
  // receive side filled with a pattern no exact result has (see reducer_bench.cc).
  void Fill(DataType dtype, uint64_t seed, uint64_t offset_bytes, size_t count) {
    FillInput(Params(dtype, seed), s_.rank, send_.data() + offset_bytes, count);
    std::memset(recv_.data() + offset_bytes, 0xA5, count * DataTypeSize(dtype));
  }

  // Between the warm-up and the timed operations, which run right after it
  // on the same inputs (reducer_bench.cc says why): the results' buffers get
  // the pattern again, so a timed operation that leaves a warm-up result
  // behind is caught.
  void Rearm(uint64_t bytes) {
    if (s_.check && s_.warmup > 0) std::memset(recv_.data(), 0xA5, bytes);
  }

  void Verify(DataType dtype, uint64_t seed, uint64_t offset_bytes, size_t count, CheckResult* found) const {
    if (!s_.check) return;
    CheckResult r = VerifyResult(Params(dtype, seed), recv_.data() + offset_bytes, count);
    if (found->wrong == 0 && r.wrong > 0) found->first_wrong = "at byte " + std::to_string(offset_bytes) + ": " + r.first_wrong;
    found->wrong += r.wrong;
  }

  std::shared_ptr<client::Operation> Start(uint64_t offset_bytes, uint64_t bytes, DataType dtype) {
    input_bytes_ += bytes;
    return client_->AllReduce(send_.data() + offset_bytes, recv_.data() + offset_bytes,
                              bytes / DataTypeSize(dtype), dtype, s_.op);
  }

  Status Await(client::Operation& op) const {
    // The client fails an operation itself after --timeout; the margin only
    // keeps a bug there from hanging the benchmark.
    return op.Wait(s_.timeout + std::chrono::seconds(10));
  }

  // Every rank starts its clock when the slowest is ready.
  Status Barrier() {
    uint64_t zero = 0;
    return AllReduceScalar(&zero, DataType::kUint64, ReduceOp::kSum);
  }

  // The slowest rank's time and the wrong elements of all ranks, the same
  // on every rank afterwards.
  Status Combine(double* time_us, uint64_t* wrong) {
    RS_RETURN_IF_ERROR(AllReduceScalar(time_us, DataType::kFloat64, ReduceOp::kMax));
    RS_RETURN_IF_ERROR(AllReduceScalar(wrong, DataType::kUint64, ReduceOp::kSum));
    wrong_ += *wrong;
    return Status::Ok();
  }

  void ReportWrong(const std::string& what, const CheckResult& found) const {
    if (found.wrong == 0) return;
    std::fprintf(stderr, "reducer-bench: rank %u: %s: %llu wrong elements; first %s\n", s_.rank, what.c_str(),
                 static_cast<unsigned long long>(found.wrong), found.first_wrong.c_str());
  }

  int Fail(const std::string& what, const Status& st) const {
    std::fprintf(stderr, "reducer-bench: rank %u: %s failed: %s\n", s_.rank, what.c_str(), st.ToString().c_str());
    return 1;
  }

  int Finish() const {
    if (s_.rank == 0) {
      std::printf("#\n# Wrong elements : %llu %s\n", static_cast<unsigned long long>(wrong_),
                  !s_.check ? "(not checked)" : wrong_ == 0 ? "OK" : "FAILED");
      std::printf("# Input bytes    : %llu per rank (all operations, warm-up and padding included)\n",
                  static_cast<unsigned long long>(input_bytes_));
      std::fflush(stdout);
    }
    return wrong_ == 0 ? 0 : 1;
  }

  std::string Wrong(uint64_t wrong) const { return s_.check ? std::to_string(wrong) : "N/A"; }

  const RunSettings s_;
  client::Client* client_ = nullptr;
  std::vector<std::byte> send_, recv_;
  std::ofstream csv_;
  uint64_t next_seed_ = 1;  // the same sequence on every rank

 private:
  // Through a member, not the caller's variable: an operation abandoned after
  // a failed wait never writes to a dead stack frame.
  template <typename T>
  Status AllReduceScalar(T* value, DataType dtype, ReduceOp op) {
    static_assert(sizeof(T) == sizeof(scalar_));
    std::memcpy(&scalar_, value, sizeof(T));
    RS_RETURN_IF_ERROR(Await(*client_->AllReduce(&scalar_, &scalar_, 1, dtype, op)));
    std::memcpy(value, &scalar_, sizeof(T));
    return Status::Ok();
  }

  uint64_t scalar_ = 0;
  uint64_t wrong_ = 0;
  uint64_t input_bytes_ = 0;
};

// The largest CollNet shape of the sweep: the buffers must hold its padding.
uint64_t LargestWire(const WorkloadOptions& o, const RunSettings& s) {
  uint64_t most = 0;
  for (uint64_t size : s.sizes) most = std::max(most, ShapeCollNet(size, o.collnet_channels, o.collnet_chunk).wire_bytes);
  return most;
}

class CollNetRun : public RunBase {
 public:
  CollNetRun(const WorkloadOptions& o, const RunSettings& s) : RunBase(s, LargestWire(o, s)), o_(o) {}

  void Describe() const override {
    if (s_.rank != 0) return;
    std::printf("# pattern collnet: NCCL 2.28 CollNet Chain on %u channel(s), chunk %s, calls %s\n",
                o_.collnet_channels, o_.collnet_chunk ? FormatBytes(o_.collnet_chunk).c_str() : "by NCCL's rule",
                o_.collnet_spin ? "polled (spin + yield)" : "waited for (block)");
    std::fflush(stdout);
  }

  int Run(client::Client& client) override {
    client_ = &client;
    if (Status st = OpenCsv("bytes,count,dtype,op,ranks,reducers,time_us,algbw_GBps,busbw_GBps,wrong,channels,"
                            "chunk_bytes,calls,call_bytes,max_inflight,wire_bytes");
        !st.ok()) {
      return Fail("opening the CSV", st);
    }
    if (s_.rank == 0) {
      std::printf("#\n# algbw = user size / time, the number to compare with the line rate. calls: iallreduce\n"
                  "# calls per user all-reduce x bytes each (whole chunks: the last one is padded).\n#\n"
                  "#%14s %12s %9s %6s %16s %8s %11s %12s %8s\n"
                  "#%14s %12s %9s %6s %16s %8s %11s %12s %8s\n",
                  "size", "count", "type", "redop", "calls", "inflight", "time", "algbw", "#wrong", "(B)",
                  "(elements)", "", "", "", "", "(us)", "(GB/s)", "");
      std::fflush(stdout);
    }
    for (DataType dtype : s_.dtypes) {
      for (uint64_t size : s_.sizes) {
        const size_t count = size / DataTypeSize(dtype);
        if (count == 0) continue;
        const uint64_t bytes = count * DataTypeSize(dtype);
        const CollNetShape shape = ShapeCollNet(bytes, o_.collnet_channels, o_.collnet_chunk);
        const std::string what = "collnet " + std::string(DataTypeName(dtype)) + " all-reduce of " + FormatBytes(bytes);
        if (Status st = RunSize(dtype, count, shape, what); !st.ok()) return Fail(what, st);
      }
    }
    return Finish();
  }

 private:
  Status RunSize(DataType dtype, size_t count, const CollNetShape& shape, const std::string& what) {
    if (shape.wire_bytes > send_.size()) return Status(Code::kInternal, "the buffers are smaller than the calls");
    Prepare(dtype, count, shape);
    RS_RETURN_IF_ERROR(Barrier());
    RS_RETURN_IF_ERROR(Replay(shape, dtype, s_.warmup));  // right before the clock (reducer_bench.cc)
    Rearm(shape.wire_bytes);
    const auto start = Clock::now();
    RS_RETURN_IF_ERROR(Replay(shape, dtype, s_.iters));
    double time_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / s_.iters;
    CheckResult found;
    Verify(dtype, seed_, 0, count, &found);
    ReportWrong(what, found);
    uint64_t wrong = found.wrong;
    RS_RETURN_IF_ERROR(Combine(&time_us, &wrong));
    Print(dtype, count, shape, time_us, wrong);
    return Status::Ok();
  }

  // The user's data, then the padding up to whole chunks: bytes that differ
  // on every rank, as a staging buffer's leftovers do.
  void Prepare(DataType dtype, size_t count, const CollNetShape& shape) {
    seed_ = next_seed_++;
    Fill(dtype, seed_, 0, count);
    const uint64_t bytes = count * DataTypeSize(dtype);
    for (uint64_t i = bytes; i < shape.wire_bytes; ++i) {
      send_[i] = static_cast<std::byte>((i * 131 + s_.rank * 977 + seed_ * 31) >> 3);
    }
    std::memset(recv_.data() + bytes, 0xA5, shape.wire_bytes - bytes);
  }

  // times user all-reduces, one after another (NCCL runs a stream's
  // collectives in order); each as its calls, in order, at most
  // max_inflight at once, the oldest polled until done.
  Status Replay(const CollNetShape& shape, DataType dtype, int times) {
    std::deque<std::shared_ptr<client::Operation>> inflight;
    for (int t = 0; t < times; ++t) {
      size_t next = 0;
      uint64_t offset = 0;
      auto deadline = Clock::now() + s_.timeout + std::chrono::seconds(10);
      while (next < shape.calls.size() || !inflight.empty()) {
        while (next < shape.calls.size() && inflight.size() < shape.max_inflight) {
          inflight.push_back(Start(offset, shape.calls[next], dtype));
          offset += shape.calls[next++];
        }
        if (o_.collnet_spin && !inflight.front()->Done()) {
          if (Clock::now() > deadline) return Status(Code::kTimeout, "a call got no answer (the client did not fail it)");
          std::this_thread::yield();
          continue;
        }
        RS_RETURN_IF_ERROR(Await(*inflight.front()));
        inflight.pop_front();
        deadline = Clock::now() + s_.timeout + std::chrono::seconds(10);
      }
    }
    return Status::Ok();
  }

  void Print(DataType dtype, size_t count, const CollNetShape& shape, double time_us, uint64_t wrong) {
    if (s_.rank != 0) return;
    const uint64_t bytes = count * DataTypeSize(dtype);
    const double algbw = static_cast<double>(bytes) / time_us / 1e3;
    const double busbw = algbw * 2.0 * (s_.world - 1) / s_.world;
    const std::string_view type = DataTypeName(dtype), op = ReduceOpName(s_.op);
    const bool uniform = std::all_of(shape.calls.begin(), shape.calls.end(),
                                     [&](uint64_t c) { return c == shape.calls.front(); });
    const std::string calls = std::to_string(shape.calls.size()) + (uniform ? " x " : " x <=") +
                              FormatBytes(*std::max_element(shape.calls.begin(), shape.calls.end()));
    std::printf(" %14llu %12zu %9.*s %6.*s %16s %8u %11.1f %12.3f %8s\n", static_cast<unsigned long long>(bytes), count,
                static_cast<int>(type.size()), type.data(), static_cast<int>(op.size()), op.data(), calls.c_str(),
                shape.max_inflight, time_us, algbw, Wrong(wrong).c_str());
    std::fflush(stdout);
    if (csv_.is_open()) {
      csv_ << bytes << ',' << count << ',' << type << ',' << op << ',' << s_.world << ',' << s_.reducers << ','
           << time_us << ',' << algbw << ',' << busbw << ',' << wrong << ',' << shape.channels << ','
           << shape.chunk_bytes << ',' << shape.calls.size() << ','
           << *std::max_element(shape.calls.begin(), shape.calls.end()) << ','
           << shape.max_inflight << ',' << shape.wire_bytes << '\n'
           << std::flush;
    }
  }

  const WorkloadOptions o_;
  uint64_t seed_ = 0;
};

class DdpRun : public RunBase {
 public:
  DdpRun(const WorkloadOptions& o, const RunSettings& s) : RunBase(s, o.ddp_model_bytes), o_(o) {}

  void Describe() const override {
    if (s_.rank != 0) return;
    std::printf(
        "# pattern ddp: %s of gradients per step, first bucket %s, %lld ms of compute before each bucket, "
        "%lld ms of forward pass before the first\n",
        FormatBytes(o_.ddp_model_bytes).c_str(), FormatBytes(o_.ddp_first_bucket_bytes).c_str(),
        static_cast<long long>(o_.ddp_gap.count()), static_cast<long long>(o_.ddp_forward.count()));
    std::fflush(stdout);
  }

  int Run(client::Client& client) override {
    client_ = &client;
    if (Status st = OpenCsv("model_bytes,bucket_bytes,first_bucket_bytes,buckets,gap_us,dtype,op,ranks,reducers,"
                            "step_us,compute_us,exposed_us,algbw_GBps,wrong,forward_us");
        !st.ok()) {
      return Fail("opening the CSV", st);
    }
    if (s_.rank == 0) {
      std::printf("#\n# step: the buckets issued as the backward pass makes them ready, all waited for at the end.\n"
                  "# exposed = step - compute: the communication the step waits for. algbw = model / step time.\n#\n"
                  "#%14s %12s %8s %9s %6s %12s %12s %12s %12s %8s\n"
                  "#%14s %12s %8s %9s %6s %12s %12s %12s %12s %8s\n",
                  "model", "bucket", "buckets", "type", "redop", "step", "compute", "exposed", "algbw", "#wrong",
                  "(B)", "(B)", "", "", "", "(us)", "(us)", "(us)", "(GB/s)", "");
      std::fflush(stdout);
    }
    for (DataType dtype : s_.dtypes) {
      for (uint64_t cap : o_.ddp_bucket_bytes) {
        const auto buckets = DdpBuckets(o_.ddp_model_bytes, cap, o_.ddp_first_bucket_bytes, DataTypeSize(dtype));
        if (buckets.empty()) continue;
        const std::string what = "ddp step, " + std::string(DataTypeName(dtype)) + ", buckets of " + FormatBytes(cap);
        if (Status st = RunBuckets(dtype, cap, buckets, what); !st.ok()) return Fail(what, st);
      }
    }
    return Finish();
  }

 private:
  Status RunBuckets(DataType dtype, uint64_t cap, const std::vector<uint64_t>& buckets, const std::string& what) {
    Prepare(dtype, buckets);
    RS_RETURN_IF_ERROR(Barrier());
    for (int i = 0; i < s_.warmup; ++i) RS_RETURN_IF_ERROR(Step(dtype, buckets));  // right before the clock
    uint64_t model = 0;
    for (uint64_t b : buckets) model += b;
    Rearm(model);
    const auto start = Clock::now();
    for (int i = 0; i < s_.iters; ++i) RS_RETURN_IF_ERROR(Step(dtype, buckets));
    double step_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / s_.iters;
    CheckResult found;
    VerifyAll(dtype, buckets, &found);
    ReportWrong(what, found);
    uint64_t wrong = found.wrong;
    RS_RETURN_IF_ERROR(Combine(&step_us, &wrong));
    Print(dtype, cap, buckets, step_us, wrong);
    return Status::Ok();
  }

  // Each bucket its own seed, so a result landing in the wrong bucket shows.
  void Prepare(DataType dtype, const std::vector<uint64_t>& buckets) {
    seed_ = next_seed_;
    next_seed_ += buckets.size();
    uint64_t offset = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      Fill(dtype, seed_ + b, offset, buckets[b] / DataTypeSize(dtype));
      offset += buckets[b];
    }
  }

  void VerifyAll(DataType dtype, const std::vector<uint64_t>& buckets, CheckResult* found) const {
    uint64_t offset = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      Verify(dtype, seed_ + b, offset, buckets[b] / DataTypeSize(dtype), found);
      offset += buckets[b];
    }
  }

  // One training step: the forward pass (a sleep, nothing on the wire),
  // then bucket b is ready after b + 1 gaps of backward compute (a sleep:
  // the GPU computes, the CPU waits) and is all-reduced at once; the step
  // ends when every bucket's result is in.
  Status Step(DataType dtype, const std::vector<uint64_t>& buckets) {
    const auto start = Clock::now() + o_.ddp_forward;
    if (o_.ddp_forward.count() > 0) std::this_thread::sleep_until(start);
    std::vector<std::shared_ptr<client::Operation>> ops;
    ops.reserve(buckets.size());
    uint64_t offset = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      if (o_.ddp_gap.count() > 0) std::this_thread::sleep_until(start + o_.ddp_gap * static_cast<int64_t>(b + 1));
      ops.push_back(Start(offset, buckets[b], dtype));
      offset += buckets[b];
    }
    for (auto& op : ops) RS_RETURN_IF_ERROR(Await(*op));
    return Status::Ok();
  }

  void Print(DataType dtype, uint64_t cap, const std::vector<uint64_t>& buckets, double step_us, uint64_t wrong) {
    if (s_.rank != 0) return;
    uint64_t model = 0;
    for (uint64_t b : buckets) model += b;
    using Micros = std::chrono::duration<double, std::micro>;
    const double forward_us = Micros(o_.ddp_forward).count(), gap_us = Micros(o_.ddp_gap).count();
    const double compute_us = forward_us + gap_us * static_cast<double>(buckets.size());
    const double exposed_us = std::max(0.0, step_us - compute_us);
    const double algbw = static_cast<double>(model) / step_us / 1e3;
    const std::string_view type = DataTypeName(dtype), op = ReduceOpName(s_.op);
    std::printf(" %14llu %12llu %8zu %9.*s %6.*s %12.1f %12.1f %12.1f %12.3f %8s\n",
                static_cast<unsigned long long>(model), static_cast<unsigned long long>(cap), buckets.size(),
                static_cast<int>(type.size()), type.data(), static_cast<int>(op.size()), op.data(), step_us,
                compute_us, exposed_us, algbw, Wrong(wrong).c_str());
    std::fflush(stdout);
    if (csv_.is_open()) {
      csv_ << model << ',' << cap << ',' << buckets.front() << ',' << buckets.size() << ','
           << gap_us << ',' << type << ',' << op << ','
           << s_.world << ',' << s_.reducers << ',' << step_us << ',' << compute_us << ',' << exposed_us << ','
           << algbw << ',' << wrong << ',' << forward_us << '\n'
           << std::flush;
    }
  }

  const WorkloadOptions o_;
  uint64_t seed_ = 0;
};

}  // namespace

std::unique_ptr<WorkloadRun> WorkloadRun::Create(const WorkloadOptions& options, const RunSettings& settings) {
  switch (options.pattern) {
    case Pattern::kCollNet: return std::make_unique<CollNetRun>(options, settings);
    case Pattern::kDdp: return std::make_unique<DdpRun>(options, settings);
    case Pattern::kSweep: break;
  }
  return nullptr;
}

}  // namespace rs::bench
