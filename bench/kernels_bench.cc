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
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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

void RegisterAll(Buffers* buffers, const std::string& size_name) {
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
