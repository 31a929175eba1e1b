// Throughput of rs::kernels::Reduce (sum, every dtype, 2/4/8/16 inputs) next to
// memcpy of the same input bytes, for arrays far larger than the caches
// (8 MiB per input) and for cache-resident ones (64 KiB per input).
//
// bytes_per_second counts bytes read plus bytes written: (N + 1) * size for a
// reduce of N inputs, 2 * N * size for the memcpy of those N inputs, so the
// ratio of the two is the fraction of memcpy's memory bandwidth the kernel
// achieves. in_bytes_per_second counts only the N * size input bytes (for the
// memcpy: the bytes copied); its ratio compares the time to reduce N inputs
// with the time to copy them. The SIMD target is in the label and context.
//
// crc32c/<implementation>/<size> times the end-to-end check (protocol/
// crc32c.h) over one input with each implementation this CPU has; its
// bytes_per_second is the bytes checked per CPU-second, the figure that sets
// what the check costs a reducer.
//
// wire/... times float32 sums on a 16-bit wire (REDUCER_WIRE_DTYPE), every
// rate in float32 bytes of the user's data: narrow/<type> and widen/<type>
// are a rank's conversions (kernels: the reducer's Highway code; client-<build>:
// the worker's auto-vectorised code, each build this CPU runs, client/wire_codec.h), and
// sum/<type>/inputs:N is the reducer's whole job on a piece of N pieces in
// the wire type (sum in float32 in rank order, round once, check the result
// fits: Session::ReduceWideSum's common case), next to reduce_sum/float32 for
// N pieces of float32; sum_float32_path/... is its path when some rank's
// piece came as float32.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/wire_codec.h"
#include "common/dtype.h"
#include "kernels/kernels.h"
#include "protocol/crc32c.h"

namespace rs {
namespace {

constexpr size_t kMaxInputs = 16;
constexpr DataType kAllTypes[] = {DataType::kInt8,    DataType::kUint8,   DataType::kInt32,
                                  DataType::kUint32,  DataType::kInt64,   DataType::kUint64,
                                  DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                                  DataType::kBfloat16};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

// Separately allocated buffers, as the reducer's per-rank slots are. The
// 0x3C byte pattern is a normal number in every float type, and sums of 16
// of them neither overflow nor go denormal, so no dtype hits slow paths.
class Buffers {
 public:
  explicit Buffers(size_t bytes_per_input) : bytes_(bytes_per_input) {
    for (size_t k = 0; k < kMaxInputs; ++k) {
      inputs_.push_back(Allocate());
      copies_.push_back(Allocate());
    }
    out_ = Allocate();
    for (const Buffer& input : inputs_) pointers_.push_back(input.get());
  }

  size_t bytes() const { return bytes_; }
  const void* const* inputs() const { return pointers_.data(); }
  const uint8_t* input(size_t k) const { return inputs_[k].get(); }
  uint8_t* copy(size_t k) { return copies_[k].get(); }
  uint8_t* out() { return out_.get(); }

 private:
  Buffer Allocate() {
    Buffer buffer(static_cast<uint8_t*>(std::aligned_alloc(64, bytes_)));
    if (!buffer) std::abort();
    std::memset(buffer.get(), 0x3C, bytes_);  // also faults the pages in
    return buffer;
  }

  size_t bytes_;
  std::vector<Buffer> inputs_;
  std::vector<Buffer> copies_;
  Buffer out_;
  std::vector<const void*> pointers_;
};

void SetRates(benchmark::State& state, size_t moved_bytes, size_t input_bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * moved_bytes));
  state.counters["in_bytes_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations() * input_bytes),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
  state.SetLabel(kernels::ReduceTargetName());
}

void BM_Reduce(benchmark::State& state, Buffers* buffers, DataType type, size_t n) {
  const size_t count = buffers->bytes() / DataTypeSize(type);
  for (auto _ : state) {
    kernels::Reduce(type, ReduceOp::kSum, buffers->out(), buffers->inputs(), n, count);
    benchmark::ClobberMemory();
  }
  SetRates(state, (n + 1) * buffers->bytes(), n * buffers->bytes());
}

void BM_Memcpy(benchmark::State& state, Buffers* buffers, size_t n) {
  for (auto _ : state) {
    for (size_t k = 0; k < n; ++k)
      std::memcpy(buffers->copy(k), buffers->input(k), buffers->bytes());
    benchmark::ClobberMemory();
  }
  SetRates(state, 2 * n * buffers->bytes(), n * buffers->bytes());
}

void BM_Crc32c(benchmark::State& state, Buffers* buffers, protocol::Crc32cImpl impl) {
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = protocol::Crc32cUsing(impl, buffers->input(0), buffers->bytes(), crc);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buffers->bytes()));
  state.SetLabel(protocol::Crc32cImplName(impl));
}

// client: the worker's build to time; none: the reducer's kernels.
using ClientCodec = std::optional<client::WireCodecImpl>;

void BM_Narrow(benchmark::State& state, Buffers* buffers, DataType wire, ClientCodec client) {
  const size_t count = buffers->bytes() / sizeof(float);
  const auto* in = reinterpret_cast<const float*>(buffers->input(0));
  auto* out = reinterpret_cast<uint16_t*>(buffers->out());
  for (auto _ : state) {
    const bool fits = client ? client::NarrowPieceUsing(*client, wire, in, out, count)
                             : kernels::NarrowFloat32(wire, in, out, count);
    benchmark::DoNotOptimize(fits);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buffers->bytes()));
  state.SetLabel(client ? client::WireCodecImplName(*client) : kernels::ReduceTargetName());
}

void BM_Widen(benchmark::State& state, Buffers* buffers, DataType wire, ClientCodec client) {
  const size_t count = buffers->bytes() / sizeof(float);
  const auto* in = reinterpret_cast<const uint16_t*>(buffers->input(0));
  auto* out = reinterpret_cast<float*>(buffers->out());
  for (auto _ : state) {
    if (client) {
      client::WidenPartUsing(*client, wire, in, out, count);
    } else {
      kernels::WidenToFloat32(wire, in, out, count);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buffers->bytes()));
  state.SetLabel(client ? client::WireCodecImplName(*client) : kernels::ReduceTargetName());
}

void BM_WireSum(benchmark::State& state, Buffers* buffers, DataType wire, size_t n, bool float32_path) {
  const size_t count = buffers->bytes() / sizeof(float);
  const std::vector<DataType> types(n, wire);
  auto* sum = reinterpret_cast<float*>(buffers->out());
  auto* rounded = reinterpret_cast<uint16_t*>(buffers->copy(0));
  for (auto _ : state) {
    if (float32_path) {
      kernels::SumToFloat32(wire, sum, buffers->inputs(), types.data(), n, count);
      benchmark::DoNotOptimize(kernels::NarrowFloat32(wire, sum, rounded, count));
    } else {
      kernels::Reduce(wire, ReduceOp::kSum, rounded, buffers->inputs(), n, count);
      benchmark::DoNotOptimize(kernels::AllFinite(wire, rounded, count));
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * buffers->bytes()));
  state.SetLabel(kernels::ReduceTargetName());
}

void RegisterAll(Buffers* buffers, const std::string& size_name) {
  for (DataType wire : {DataType::kBfloat16, DataType::kFloat16}) {
    const std::string type(DataTypeName(wire));
    std::vector<ClientCodec> codecs = {std::nullopt};
    for (auto impl : {client::WireCodecImpl::kAvx512, client::WireCodecImpl::kAvx2, client::WireCodecImpl::kPortable}) {
      if (client::WireCodecAvailable(impl)) codecs.push_back(impl);
    }
    for (ClientCodec client : codecs) {
      const std::string who = client ? std::string("client-") + client::WireCodecImplName(*client) : "kernels";
      benchmark::RegisterBenchmark(("wire/narrow/" + type + "/" + who + "/" + size_name).c_str(), BM_Narrow, buffers,
                                   wire, client);
      benchmark::RegisterBenchmark(("wire/widen/" + type + "/" + who + "/" + size_name).c_str(), BM_Widen, buffers,
                                   wire, client);
    }
    for (size_t n : {2, 4, 8, 16}) {
      const std::string suffix = type + "/inputs:" + std::to_string(n) + "/" + size_name;
      benchmark::RegisterBenchmark(("wire/sum/" + suffix).c_str(), BM_WireSum, buffers, wire, n, false);
      benchmark::RegisterBenchmark(("wire/sum_float32_path/" + suffix).c_str(), BM_WireSum, buffers, wire, n, true);
    }
  }
  for (protocol::Crc32cImpl impl :
       {protocol::Crc32cImpl::kAvx512, protocol::Crc32cImpl::kSse42, protocol::Crc32cImpl::kPortable}) {
    if (!protocol::Crc32cAvailable(impl)) continue;
    std::string name = std::string("crc32c/") + protocol::Crc32cImplName(impl) + "/" + size_name;
    for (char& c : name) c = c == ' ' ? '_' : c;
    benchmark::RegisterBenchmark(name.c_str(), BM_Crc32c, buffers, impl);
  }
  for (size_t n : {2, 4, 8, 16}) {
    const std::string suffix = "/inputs:" + std::to_string(n) + "/" + size_name;
    benchmark::RegisterBenchmark(("memcpy" + suffix).c_str(), BM_Memcpy, buffers, n);
    for (DataType type : kAllTypes) {
      const std::string name = "reduce_sum/" + std::string(DataTypeName(type)) + suffix;
      benchmark::RegisterBenchmark(name.c_str(), BM_Reduce, buffers, type, n);
    }
  }
}

}  // namespace
}  // namespace rs

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("reduce_simd_target", rs::kernels::ReduceTargetName());
  // 2 x 16 x 8 MiB + 8 MiB: the caches hold a negligible share of it.
  rs::Buffers large(8 << 20);
  rs::Buffers small(64 << 10);
  rs::RegisterAll(&large, "8MiB");
  rs::RegisterAll(&small, "64KiB");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
