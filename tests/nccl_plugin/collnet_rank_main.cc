// nccl_collnet_rank: one node's head rank in the CollNet tests, standing in
// for NCCL 2.28's CollNet Chain proxy (transport/coll_net.cc). It dlopens the
// plugin and, per communicator, does what collnet_node.h lists, on NCCL's
// threads: init and devices on the main thread, listen / connect /
// closeListen / regMr on a proxy thread (connect with the handles in NCCL's
// order: by the heads' global ranks, this node's index as `rank`; the
// staging buffer registered 2 x nChannels times with distinct handles),
// reduceSupport for every type and op 0-3 once every channel is connected,
// then iallreduce and test on a progress thread: whole chunks (32 KiB to
// 2 MiB; a 4 KiB all-reduce moves 32 KiB whose tail differs per node) with up
// to 64 in flight, NULL requests retried, test polled until done and never
// again, no iflush, only (type, op) pairs every node supports, Avg handed
// over as Sum; at the end deregMr and closeColl on the proxy thread, then
// net finalize before CollNet finalize.
// Reducers come from the environment (REDUCER_ADDRS, REDUCER_JOB_TOKEN).
//
//   nccl_collnet_rank <plugin.so> <dir> <node> <order> <5|6|7|11> <scenario>
//
// <order> lists the node indices in the order of the handles connect gets,
// e.g. "2,0,1" (nodes = its length). Scenarios:
//   allreduce      batches of chunks in four data types and four ops, every
//                  element checked
//   recreate       a communicator destroyed and created again twice, the
//                  second time after unloading and reloading the library
//   failure        all-reduces until test() reports an error (a reducer is
//                  killed by the test once "running" is printed)
//   failover       300 float32 chunks, 8 in flight, every result checked,
//                  while the test kills a reducer once "running" is printed:
//                  with failover on, NCCL must see nothing but right results
//   connect_fails  expects connect to fail on every node (settings differ)
//   perf           NCCL's CollNet calls for user all-reduces of a few sizes,
//                  timed, nothing checked (PerfScenario: COLLNET_PERF_*)
//   tuner          after connect, the tuner NCCL would load with these
//                  tables (v5 with v11, v4 with v7: NCCL 2.24 - 2.27) for a
//                  communicator of one rank per node, as NCCL inits it after
//                  CollNet's setup; prints the algorithm a 64 MiB all-reduce
//                  gets ("tuner picks N"). What the plugin writes to stderr
//                  on the way is the test's to check.
// Exit: 0 success, 1 failed check (reason on stderr), 2 timeout.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/workloads.h"
#include "common/half.h"
#include "nccl_plugin/abi/nccl_tuner_abi.h"
#include "tests/nccl_plugin/collnet_node.h"
#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {
namespace {

constexpr auto kTimeout = std::chrono::seconds(120);
constexpr int kMaxInFlight = 64;  // NCCL's CollNet proxy at most

// Small integers: every sum over a few nodes is exact even in bfloat16.
double Value(int node, int call, size_t i) { return (node + 1) * static_cast<int>(i % 7 + 1) + call % 5; }
// The tail of a whole chunk beyond the valid bytes: whatever each node's
// staging slot held, different on every node.
double TailValue(int node, size_t i) { return (node + 3) * static_cast<int>(i % 5 + 1); }

size_t ElementSize(int dtype) { return dtype == abi::kNcclFloat16 || dtype == abi::kNcclBfloat16 ? 2 : 4; }

void Write(uint8_t* p, int dtype, size_t i, double v) {
  switch (dtype) {
    case abi::kNcclFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(p + 4 * i, &f, 4);
      return;
    }
    case abi::kNcclFloat16: {
      const uint16_t h = FloatToHalf(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case abi::kNcclBfloat16: {
      const uint16_t h = FloatToBfloat16(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    default: {
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(p + 4 * i, &x, 4);
    }
  }
}

double Read(const uint8_t* p, int dtype, size_t i) {
  switch (dtype) {
    case abi::kNcclFloat32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case abi::kNcclFloat16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return HalfToFloat(h);
    }
    case abi::kNcclBfloat16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return Bfloat16ToFloat(h);
    }
    default: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
  }
}

// What the reducers must return for one element, given every node's input.
double Combine(int net_op, double acc, double v) {
  switch (net_op) {
    case abi::kNcclMax: return std::max(acc, v);
    case abi::kNcclMin: return std::min(acc, v);
    case abi::kNcclProd: return acc * v;
    default: return acc + v;
  }
}

// One iallreduce as NCCL's proxy issues it: whole chunks (`bytes`), of which
// the collective only wrote the first `valid` bytes.
struct Call {
  int dtype;
  size_t bytes;
  size_t valid;
  bool nan_tail = false;  // node 0's tail holds a NaN (float32): no trap, NaN out
  int op = abi::kNcclSum;  // the user's op; CollNet gets NetOp(op)
};

// Batches of calls that each fit the staging region; a batch is posted in
// full (up to 64 in flight) before its results are checked.
std::vector<std::vector<Call>> Plan(bool short_plan) {
  std::vector<std::vector<Call>> batches;
  // 64 small chunks: 4 KiB all-reduces moving 32 KiB, and full 32-64 KiB
  // chunks; a few max, min and average (NCCL sends an average as a sum and
  // divides on the GPU).
  std::vector<Call> small;
  for (int i = 0; i < kMaxInFlight; ++i) {
    const int dtypes[] = {abi::kNcclFloat32, abi::kNcclFloat16, abi::kNcclBfloat16, abi::kNcclInt32};
    const int ops[] = {abi::kNcclSum, abi::kNcclSum, abi::kNcclSum, abi::kNcclSum,
                       abi::kNcclSum, abi::kNcclMax, abi::kNcclMin, abi::kNcclAvg};
    const int dtype = dtypes[i % 4];
    const size_t bytes = (i % 3 == 2 ? 64 : 32) << 10;
    Call c{dtype, bytes, i % 3 == 0 ? size_t{4096} : bytes};
    c.nan_tail = i == 0;
    c.op = ops[i % 8];
    small.push_back(c);
  }
  batches.push_back(small);
  if (short_plan) return batches;
  // Medium and large chunks, up to NCCL's 2 MiB per call.
  std::vector<Call> medium;
  for (int i = 0; i < 48; ++i) {
    const size_t bytes = size_t{128 << 10} << (i % 3);  // 128, 256, 512 KiB
    medium.push_back(Call{i % 2 ? abi::kNcclBfloat16 : abi::kNcclFloat32, bytes, bytes});
  }
  batches.push_back(medium);
  std::vector<Call> large;
  for (int i = 0; i < 8; ++i) {
    const size_t bytes = (i % 2 ? 2 : 1) << 20;
    large.push_back(Call{i % 4 == 3 ? abi::kNcclInt32 : abi::kNcclFloat32, bytes, bytes - (i == 5 ? 12288 : 0)});
  }
  batches.push_back(large);
  return batches;
}

uint8_t* SendRegion(Node& n) { return n.staging.data(); }
uint8_t* RecvRegion(Node& n) { return n.staging.data() + kRegionBytes; }

// The channel's send-side handle for the send buffer, and its receive
// side's for the result, as sendProxyProgress passes them.
void* PostAllReduce(Node& n, int channel, void* send, void* recv, size_t count, int dtype, int op) {
  void* request = nullptr;
  const size_t c = static_cast<size_t>(channel % kChannels);
  while (request == nullptr) {
    Check(n.coll.iallreduce(n.comm, send, recv, count, dtype, NetOp(op), n.send_mh[c], n.recv_mh[c], &request),
          "iallreduce");
    if (Clock::now() > n.deadline) Die(2, "iallreduce kept returning a NULL request");
  }
  return request;
}

Result WaitDone(Node& n, void* request, int* size) {
  int done = 0;
  while (!done) {
    const Result r = n.coll.test(request, &done, size);
    if (r != Result::kSuccess) return r;
    if (Clock::now() > n.deadline) Die(2, "test never reported done");
  }
  return Result::kSuccess;
}

// Checks every element of a finished call; dies naming the first wrong one.
void Verify(Node& n, const Call& c, int call_no, const uint8_t* out) {
  const size_t elem = ElementSize(c.dtype);
  const int nodes = static_cast<int>(n.order.size());
  for (size_t i = 0; i < c.bytes / elem; ++i) {
    const bool valid = i * elem < c.valid;
    double want = valid ? Value(0, call_no, i) : TailValue(0, i);
    for (int r = 1; r < nodes; ++r) want = Combine(NetOp(c.op), want, valid ? Value(r, call_no, i) : TailValue(r, i));
    const double got = Read(out, c.dtype, i);
    const bool nan_expected = c.nan_tail && c.dtype == abi::kNcclFloat32 && i * elem == c.valid;
    if (nan_expected ? !std::isnan(got) : got != want) {
      std::ostringstream os;
      os << "call " << call_no << " (dtype " << c.dtype << ", op " << c.op << ", " << c.bytes << " bytes, " << c.valid
         << " valid) element " << i << ": got " << got << ", want "
         << (nan_expected ? std::numeric_limits<double>::quiet_NaN() : want);
      Die(1, os.str());
    }
  }
}

// Runs the batches on the progress thread; returns the number of calls
// verified.
size_t AllReduces(Node& n, const std::vector<std::vector<Call>>& batches) {
  size_t verified = 0;
  OnProgress(n, "the all-reduces", [&] {
    int call_no = 0;
    for (const std::vector<Call>& batch : batches) {
      std::vector<void*> requests;
      std::vector<size_t> offsets;
      std::vector<int> numbers;
      size_t offset = 0;
      for (const Call& c : batch) {
        const int number = call_no++;
        // NCCL would run a pair some node cannot reduce without CollNet.
        if (!UsesCollNet(n, c.dtype, c.op)) continue;
        const size_t elem = ElementSize(c.dtype);
        const size_t count = c.bytes / elem;
        uint8_t* send = SendRegion(n) + offset;
        for (size_t i = 0; i < count; ++i) {
          Write(send, c.dtype, i, i * elem < c.valid ? Value(n.node, number, i) : TailValue(n.node, i));
        }
        if (c.nan_tail && n.node == 0) {
          const float nan = std::numeric_limits<float>::quiet_NaN();
          std::memcpy(send + c.valid, &nan, 4);
        }
        std::memset(RecvRegion(n) + offset, 0xEE, c.bytes);
        requests.push_back(PostAllReduce(n, number, send, RecvRegion(n) + offset, count, c.dtype, c.op));
        offsets.push_back(offset);
        numbers.push_back(number);
        offset += c.bytes;
        if (offset > kRegionBytes) Die(1, "batch larger than the staging region");
      }
      for (size_t k = 0, j = 0; k < batch.size(); ++k) {
        const Call& c = batch[k];
        if (!UsesCollNet(n, c.dtype, c.op)) continue;
        int size = -1;
        Check(WaitDone(n, requests[j], &size), "test");
        if (size != static_cast<int>(c.bytes)) {
          Die(1, "test reported " + std::to_string(size) + " bytes of " + std::to_string(c.bytes));
        }
        Verify(n, c, numbers[j], RecvRegion(n) + offsets[j]);
        ++verified;
        ++j;
      }
    }
  });
  return verified;
}

void FailureScenario(Node& n) {
  OnProgress(n, "the all-reduces until a failure", [&] {
    constexpr size_t kCount = 1 << 18;  // 1 MiB of float32
    float* send = reinterpret_cast<float*>(SendRegion(n));
    std::fill(send, send + kCount, 1.0f);
    for (int i = 0;; ++i) {
      void* req = PostAllReduce(n, i, send, RecvRegion(n), kCount, abi::kNcclFloat32, abi::kNcclSum);
      int size = 0;
      const Result r = WaitDone(n, req, &size);
      if (r != Result::kSuccess) {
        std::printf("node %d: test returned %d after %d operations\n", n.node, static_cast<int>(r), i);
        break;  // the comm is still closed cleanly
      }
      if (i == 3) {
        std::printf("running\n");
        std::fflush(stdout);
      }
    }
  });
}

void FailoverScenario(Node& n) {
  constexpr int kChunks = 300;
  constexpr int kWindow = 8;
  constexpr size_t kCount = 64 << 10;  // 256 KiB of float32
  OnProgress(n, "the all-reduces across a failover", [&] {
    const int nodes = static_cast<int>(n.order.size());
    float* send_slots = reinterpret_cast<float*>(SendRegion(n));
    float* recv_slots = reinterpret_cast<float*>(RecvRegion(n));
    auto input = [](int node, int k, size_t i) {
      return static_cast<float>((node + 1) * (k % 1000) + static_cast<int>(i % 7));
    };
    std::vector<void*> requests(kChunks, nullptr);
    auto finish = [&](int k) {
      int size = 0;
      Check(WaitDone(n, requests[static_cast<size_t>(k)], &size), "test");
      const float* out = recv_slots + (k % kWindow) * kCount;
      for (size_t i = 0; i < kCount; i += 997) {
        float want = 0;
        for (int r = 0; r < nodes; ++r) want += input(r, k, i);
        if (out[i] != want) {
          Die(1, "chunk " + std::to_string(k) + " element " + std::to_string(i) + ": got " + std::to_string(out[i]) +
                     ", want " + std::to_string(want));
        }
      }
      if (k == 10) {
        std::printf("running\n");
        std::fflush(stdout);
      }
    };
    for (int k = 0; k < kChunks; ++k) {
      if (k >= kWindow) finish(k - kWindow);
      float* send = send_slots + (k % kWindow) * kCount;
      float* recv = recv_slots + (k % kWindow) * kCount;
      for (size_t i = 0; i < kCount; ++i) send[i] = input(n.node, k, i);
      requests[static_cast<size_t>(k)] = PostAllReduce(n, k, send, recv, kCount, abi::kNcclFloat32, abi::kNcclSum);
    }
    for (int k = kChunks - kWindow; k < kChunks; ++k) finish(k);
  });
  std::printf("node %d: %d all-reduces verified across the failover\n", n.node, kChunks);
}

// NCCL 2.28.9's CollNet traffic for user all-reduces of each size in
// COLLNET_PERF_SIZES (bytes, K/M suffixes; default "1M 16M 64M"), timed:
// the calls of bench/workloads.h's ShapeCollNet on COLLNET_PERF_CHANNELS
// channels (default 4), at most its calls in flight, test() spun on the
// oldest as the proxy does, COLLNET_PERF_ITERS timed all-reduces (default
// 10) after 2. Calls cycle through the staging region; nothing is checked.
// Prints "node N perf: bytes=S calls=K inflight=F ms=T algbw=G" per size.
// COLLNET_PERF_EXIT_OPEN=1: exits afterwards without closing the
// communicator.
void PerfScenario(Node& n) {
  const char* sizes_env = std::getenv("COLLNET_PERF_SIZES");
  const char* iters_env = std::getenv("COLLNET_PERF_ITERS");
  const char* channels_env = std::getenv("COLLNET_PERF_CHANNELS");
  const int iters = iters_env != nullptr ? std::atoi(iters_env) : 10;
  const uint32_t channels = channels_env != nullptr ? static_cast<uint32_t>(std::atoi(channels_env)) : 4;
  std::stringstream sizes(sizes_env != nullptr ? sizes_env : "1M 16M 64M");
  // NCCL's staging buffers are in use all the time: both halves faulted in,
  // every node's input different.
  for (size_t i = 0; i < kRegionBytes; ++i) SendRegion(n)[i] = static_cast<uint8_t>(i * 7 + n.node);
  std::memset(RecvRegion(n), 0, kRegionBytes);
  for (std::string item; sizes >> item;) {
    uint64_t user = std::strtoull(item.c_str(), nullptr, 10);
    if (item.back() == 'K') user <<= 10;
    if (item.back() == 'M') user <<= 20;
    const bench::CollNetShape shape = bench::ShapeCollNet(user, channels, 0);
    OnProgress(n, "the timed all-reduces", [&] {
      std::deque<void*> out;
      size_t offset = 0;
      // NCCL's progress thread yields when a pass found nothing to do.
      auto oldest_done = [&] {
        int done = 0;
        int size = 0;
        while (!done) {
          Check(n.coll.test(out.front(), &done, &size), "test");
          if (!done) std::this_thread::yield();
          if (Clock::now() > n.deadline) Die(2, "test never reported done");
        }
        out.pop_front();
      };
      Clock::time_point start;
      for (int it = 0; it < iters + 2; ++it) {
        if (it == 2) start = Clock::now();
        for (const uint64_t bytes : shape.calls) {
          if (out.size() >= shape.max_inflight) oldest_done();
          if (offset + bytes > kRegionBytes) offset = 0;
          out.push_back(PostAllReduce(n, 0, SendRegion(n) + offset, RecvRegion(n) + offset, bytes / 4,
                                      abi::kNcclFloat32, abi::kNcclSum));
          offset += bytes;
        }
        while (!out.empty()) oldest_done();
      }
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / iters;
      std::printf("node %d perf: bytes=%" PRIu64 " calls=%zu inflight=%u ms=%.3f algbw=%.3f\n", n.node, user,
                  shape.calls.size(), shape.max_inflight, ms, static_cast<double>(user) / ms / 1e6);
      std::fflush(stdout);
    });
  }
}

void TunerScenario(const Node& n) {
  const size_t nodes = n.order.size();
  const void* found = n.plugin->Symbol(n.version == 11 ? "ncclTunerPlugin_v5" : "ncclTunerPlugin_v4");
  if (found == nullptr) Die(1, "no tuner table");
  float table[abi::kNumAlgorithms][abi::kNumProtocols];
  for (auto& row : table) {
    for (float& c : row) c = abi::kAlgoProtoIgnore;
  }
  table[abi::kAlgoRing][abi::kProtoSimple] = 100.0f;
  table[abi::kAlgoCollNetChain][abi::kProtoSimple] = 200.0f;
  int channels = 0;
  void* ctx = nullptr;
  if (n.version == 11) {
    const auto* t = static_cast<const abi::TunerV5*>(found);
    abi::NvlDomainInfoV5 nvl{static_cast<int>(nodes), 1, 1};
    Check(t->init(&ctx, 0x7e57, nodes, nodes, &TestLogger, &nvl, nullptr), "tuner init");
    Check(t->getCollInfo(ctx, abi::kFuncAllReduce, 64 << 20, 1, reinterpret_cast<float**>(table),
                         abi::kNumAlgorithms, abi::kNumProtocols, 0, &channels),
          "getCollInfo");
    Check(t->finalize(ctx), "tuner finalize");
  } else {
    const auto* t = static_cast<const abi::TunerV4*>(found);
    Check(t->init(nodes, nodes, &TestLogger, &ctx), "tuner init");
    Check(t->getCollInfo(ctx, abi::kFuncAllReduce, 64 << 20, 1, reinterpret_cast<float**>(table),
                         abi::kNumAlgorithms, abi::kNumProtocols, 0, &channels),
          "getCollInfo");
    Check(t->destroy(ctx), "tuner destroy");
  }
  const bool collnet = table[abi::kAlgoCollNetChain][abi::kProtoSimple] >= 0 &&
                       table[abi::kAlgoCollNetChain][abi::kProtoSimple] < table[abi::kAlgoRing][abi::kProtoSimple];
  std::printf("tuner picks %s\n", collnet ? "collnet" : "ring");
}

std::unique_ptr<LoadedPlugin> Load(const std::string& path) {
  std::string error;
  std::unique_ptr<LoadedPlugin> plugin = LoadedPlugin::Open(path, &error);
  if (!plugin) Die(1, error);
  return plugin;
}

void Bind(Node& n, const LoadedPlugin& plugin) {
  n.plugin = &plugin;
  // NCCL pairs CollNet v7 with net v8 (2.20 - 2.27); below v7 both tables
  // have the same version (v6: 2.13 - 2.18, v5: 2.12).
  n.net = plugin.Net(n.version == 11 ? 11 : n.version >= 7 ? 8 : n.version);
  n.coll = plugin.Coll(n.version);
  n.first_comm = true;  // a library just loaded: NCCL asks for its devices
}

int Run(const std::string& path, Node& n, const std::string& scenario) {
  std::unique_ptr<LoadedPlugin> plugin = Load(path);
  Bind(n, *plugin);
  const Result connected = OpenCommunicator(n);
  if (scenario == "connect_fails") {
    // Every node must refuse alike; the test compares what they print.
    std::printf("connect returned %d\n", static_cast<int>(connected));
    CloseCommunicator(n);
    return connected == Result::kSuccess ? 1 : 0;
  }
  Check(connected, "connect");
  if (scenario == "tuner") {
    TunerScenario(n);
  } else if (scenario == "allreduce") {
    std::printf("node %d: %zu all-reduces verified\n", n.node, AllReduces(n, Plan(false)));
  } else if (scenario == "failure") {
    FailureScenario(n);
  } else if (scenario == "failover") {
    FailoverScenario(n);
  } else if (scenario == "perf") {
    PerfScenario(n);
    if (std::getenv("COLLNET_PERF_EXIT_OPEN") != nullptr) {
      // As a script that never calls destroy_process_group: exit with the
      // communicator open (REDUCER_COLLNET_TRACE is then written at exit).
      std::fflush(stdout);
      std::exit(0);
    }
  } else if (scenario == "recreate") {
    std::printf("node %d round 0: %zu all-reduces verified\n", n.node, AllReduces(n, Plan(true)));
    CloseCommunicator(n);
    n.round = 1;  // a new communicator on the same loaded library
    Check(OpenCommunicator(n), "connect (round 1)");
    std::printf("node %d round 1: %zu all-reduces verified\n", n.node, AllReduces(n, Plan(true)));
    CloseCommunicator(n);
    plugin.reset();  // NCCL unloads the library with its last communicator
    plugin = Load(path);
    Bind(n, *plugin);
    n.round = 2;
    Check(OpenCommunicator(n), "connect (round 2)");
    std::printf("node %d round 2: %zu all-reduces verified\n", n.node, AllReduces(n, Plan(true)));
  } else {
    Die(1, "unknown scenario " + scenario);
  }
  CloseCommunicator(n);
  return 0;
}

}  // namespace
}  // namespace rs::plugin::test

int main(int argc, char** argv) {
  using namespace rs::plugin::test;
  if (argc != 7) {
    std::fprintf(stderr, "usage: nccl_collnet_rank <plugin.so> <dir> <node> <order> <5|6|7|11> <scenario>\n");
    return 1;
  }
  Node n;
  n.dir = argv[2];
  n.node = std::atoi(argv[3]);
  std::stringstream order(argv[4]);
  for (std::string item; std::getline(order, item, ',');) n.order.push_back(std::atoi(item.c_str()));
  n.version = std::atoi(argv[5]);
  n.deadline = After(std::chrono::duration_cast<std::chrono::milliseconds>(kTimeout));
  const int rc = Run(argv[1], n, argv[6]);
  std::fflush(stdout);
  return rc;
}
