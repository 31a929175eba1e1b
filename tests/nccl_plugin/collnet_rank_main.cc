// nccl_collnet_rank: one node's head rank in the CollNet tests, standing in
// for NCCL's CollNet Chain proxy. It dlopens the plugin, runs net init, then
// the CollNet table (v7 or v8): init, devices, listen, handle exchange through
// a shared directory, the collective connect, two overlapping registrations
// of one staging buffer (send and receive sides, as NCCL does without
// GPUDirect), and a stream of iallreduce calls of NCCL's chunk sizes with
// dozens in flight, retrying NULL requests and polling test. Reducers come
// from the environment (REDUCER_ADDRS, REDUCER_JOB_TOKEN).
//
//   nccl_collnet_rank <plugin.so> <dir> <rank> <nranks> <7|8> <scenario>
//
// Scenarios:
//   allreduce  float32, float16, bfloat16 and int32 chunks, every result checked
//   failure    all-reduces until test() reports an error (a reducer is killed
//              by the test once "running" is printed); prints the result code
//   failover   300 float32 chunks, 8 in flight, every result checked, while the
//              test kills a reducer once "running" is printed: with failover
//              on, NCCL must see nothing but correct results
//   connect_fails  expects connect to fail (nodes configured differently)
// Exit: 0 success, 1 failed check (reason on stderr), 2 timeout.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/half.h"
#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {
namespace {

constexpr auto kTimeout = std::chrono::seconds(90);
constexpr int kMaxInFlight = 48;

[[noreturn]] void Die(int code, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", code == 2 ? "TIMEOUT" : "FAILED", what.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

void Check(Result got, const char* what) {
  if (got != Result::kSuccess) Die(1, std::string(what) + " returned " + std::to_string(static_cast<int>(got)));
}

// Small integers: every sum over a few ranks is exact even in bfloat16.
int Value(int rank, int call, size_t i) { return (rank + 1) * static_cast<int>(i % 7 + 1) + call % 5; }

struct Chunk {
  int dtype;  // NCCL's numbering
  size_t elem;
  size_t count;
  size_t offset;  // bytes into the staging buffer
  bool in_place;
};

void Fill(uint8_t* p, const Chunk& c, int rank, int call) {
  for (size_t i = 0; i < c.count; ++i) {
    const int v = Value(rank, call, i);
    switch (c.dtype) {
      case abi::kNcclFloat32: {
        const float f = static_cast<float>(v);
        std::memcpy(p + 4 * i, &f, 4);
        break;
      }
      case abi::kNcclFloat16: {
        const uint16_t h = FloatToHalf(static_cast<float>(v));
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      case abi::kNcclBfloat16: {
        const uint16_t h = FloatToBfloat16(static_cast<float>(v));
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      default:
        std::memcpy(p + 4 * i, &v, 4);
        break;
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

// The sequence of chunks every rank issues: NCCL's CollNet Chain sizes
// (32 KiB to 4 MiB, some not a multiple of a piece), four data types.
std::vector<Chunk> Plan(size_t* staging_bytes) {
  const int dtypes[] = {abi::kNcclFloat32, abi::kNcclFloat16, abi::kNcclBfloat16, abi::kNcclInt32};
  const size_t sizes[] = {32 << 10, 96 << 10, 256 << 10, (1 << 20) + 512, 2 << 20, (3 << 20) + 4096, 4 << 20};
  std::vector<Chunk> plan;
  size_t offset = 0;
  int n = 0;
  for (int round = 0; round < 2; ++round) {
    for (int dtype : dtypes) {
      for (size_t bytes : sizes) {
        const size_t elem = dtype == abi::kNcclFloat16 || dtype == abi::kNcclBfloat16 ? 2 : 4;
        Chunk c{dtype, elem, bytes / elem, offset, (n++ % 3) == 0};
        offset += (c.in_place ? 1 : 2) * bytes;
        plan.push_back(c);
      }
    }
  }
  *staging_bytes = offset;
  return plan;
}

template <typename Table>
struct Node {
  const Table* coll = nullptr;
  int rank = 0;
  int nranks = 0;
  void* comm = nullptr;
  Deadline deadline;
};

template <typename Table>
void* PostAllReduce(Node<Table>& n, void* send, void* recv, int count, int dtype, void* mh) {
  void* request = nullptr;
  while (request == nullptr) {
    Check(n.coll->iallreduce(n.comm, send, recv, count, dtype, /*sum*/ 0, mh, mh, &request), "iallreduce");
    if (Clock::now() > n.deadline) Die(2, "iallreduce kept returning a NULL request");
  }
  return request;
}

template <typename Table>
Result WaitDone(Node<Table>& n, void* request, int* size) {
  int done = 0;
  while (!done) {
    const Result r = n.coll->test(request, &done, size);
    if (r != Result::kSuccess) return r;
    if (Clock::now() > n.deadline) Die(2, "test never reported done");
  }
  return Result::kSuccess;
}

template <typename Table>
void AllReduceScenario(Node<Table>& n) {
  size_t staging_bytes = 0;
  const std::vector<Chunk> plan = Plan(&staging_bytes);
  std::vector<uint8_t> staging(staging_bytes);
  // Send and receive sides register the same buffer, as NCCL does.
  void* send_mh = nullptr;
  void* recv_mh = nullptr;
  Check(n.coll->regMr(n.comm, staging.data(), static_cast<int>(staging.size()), abi::kPtrHost, &send_mh), "regMr");
  Check(n.coll->regMr(n.comm, staging.data(), static_cast<int>(staging.size()), abi::kPtrHost, &recv_mh), "regMr 2");

  std::vector<void*> requests(plan.size(), nullptr);
  size_t next_done = 0;
  auto finish = [&](size_t k) {
    const Chunk& c = plan[k];
    int size = -1;
    Check(WaitDone(n, requests[k], &size), "test");
    if (size != static_cast<int>(c.count * c.elem)) Die(1, "test reported " + std::to_string(size) + " bytes");
    const uint8_t* out = staging.data() + c.offset + (c.in_place ? 0 : c.count * c.elem);
    for (size_t i = 0; i < c.count; ++i) {
      double want = 0;
      for (int r = 0; r < n.nranks; ++r) want += Value(r, static_cast<int>(k), i);
      if (Read(out, c.dtype, i) != want) {
        Die(1, "chunk " + std::to_string(k) + " (dtype " + std::to_string(c.dtype) + ") element " +
                   std::to_string(i) + ": got " + std::to_string(Read(out, c.dtype, i)) + ", want " +
                   std::to_string(want));
      }
    }
  };
  for (size_t k = 0; k < plan.size(); ++k) {
    const Chunk& c = plan[k];
    uint8_t* send = staging.data() + c.offset;
    uint8_t* recv = c.in_place ? send : send + c.count * c.elem;
    Fill(send, c, n.rank, static_cast<int>(k));
    requests[k] = PostAllReduce(n, send, recv, static_cast<int>(c.count), c.dtype, send_mh);
    if (k + 1 - next_done >= kMaxInFlight) finish(next_done++);
  }
  while (next_done < plan.size()) finish(next_done++);
  void* flush = reinterpret_cast<void*>(1);
  Check(n.coll->iflush(n.comm, staging.data(), 4096, recv_mh, &flush), "iflush");
  if (flush != nullptr) Die(1, "iflush of host memory should complete at once");
  Check(n.coll->deregMr(n.comm, send_mh), "deregMr");
  Check(n.coll->deregMr(n.comm, recv_mh), "deregMr 2");
  std::printf("rank %d: %zu all-reduces verified\n", n.rank, plan.size());
}

template <typename Table>
void FailureScenario(Node<Table>& n) {
  std::vector<float> buf(1 << 18, 1.0f);
  void* mh = nullptr;
  Check(n.coll->regMr(n.comm, buf.data(), static_cast<int>(buf.size() * 4), abi::kPtrHost, &mh), "regMr");
  for (int i = 0;; ++i) {
    void* req = PostAllReduce(n, buf.data(), buf.data(), static_cast<int>(buf.size()), abi::kNcclFloat32, mh);
    int size = 0;
    const Result r = WaitDone(n, req, &size);
    if (r != Result::kSuccess) {
      std::printf("rank %d: test returned %d after %d operations\n", n.rank, static_cast<int>(r), i);
      return;  // the comm is still closed cleanly below
    }
    if (i == 3) {
      std::printf("running\n");
      std::fflush(stdout);
    }
  }
}

template <typename Table>
void FailoverScenario(Node<Table>& n) {
  constexpr int kChunks = 300;
  constexpr int kWindow = 8;
  constexpr size_t kCount = 64 << 10;  // 256 KiB of float32
  std::vector<std::vector<float>> bufs(kWindow, std::vector<float>(kCount));
  void* mh = nullptr;
  Check(n.coll->regMr(n.comm, bufs[0].data(), static_cast<int>(kCount * 4), abi::kPtrHost, &mh), "regMr");
  std::vector<void*> requests(kChunks, nullptr);
  auto finish = [&](int k) {
    int size = 0;
    Check(WaitDone(n, requests[k], &size), "test");
    const std::vector<float>& out = bufs[k % kWindow];
    for (size_t i = 0; i < kCount; i += 997) {
      float want = 0;
      for (int r = 0; r < n.nranks; ++r) want += static_cast<float>((r + 1) * (k % 1000) + static_cast<int>(i % 7));
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
    std::vector<float>& buf = bufs[k % kWindow];
    for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>((n.rank + 1) * (k % 1000) + static_cast<int>(i % 7));
    requests[k] = PostAllReduce(n, buf.data(), buf.data(), static_cast<int>(kCount), abi::kNcclFloat32, mh);
  }
  for (int k = kChunks - kWindow; k < kChunks; ++k) finish(k);
  Check(n.coll->deregMr(n.comm, mh), "deregMr");
  std::printf("rank %d: %d all-reduces verified across the failover\n", n.rank, kChunks);
}

template <typename Table>
int Run(const LoadedPlugin& plugin, const Table* coll, const std::string& dir, int rank, int nranks,
        const std::string& scenario) {
  Node<Table> n{coll, rank, nranks, nullptr, After(std::chrono::duration_cast<std::chrono::milliseconds>(kTimeout))};
  const NetApi net = plugin.Net(8);
  Check(net.init(&TestLogger), "net init");
  Check(coll->init(&TestLogger), "collnet init");
  int ndev = 0;
  Check(coll->devices(&ndev), "collnet devices");
  if (ndev != 1) Die(1, "CollNet reports " + std::to_string(ndev) + " devices with reducers configured");
  int supported = 0;
  Check(coll->reduceSupport(abi::kNcclBfloat16, 0, &supported), "reduceSupport");
  if (!supported) Die(1, "bfloat16 sum reported unsupported");
  Check(coll->reduceSupport(abi::kNcclFloat8e4m3, 0, &supported), "reduceSupport fp8");
  if (supported) Die(1, "float8 reported supported");

  alignas(8) char mine[abi::kHandleMaxBytes] = {};
  void* listen_comm = nullptr;
  Check(coll->listen(0, mine, &listen_comm), "listen");
  WriteFileAtomic(dir + "/handle." + std::to_string(rank), mine, sizeof(mine));
  std::vector<std::vector<char>> handles(nranks, std::vector<char>(abi::kHandleMaxBytes));
  std::vector<void*> handle_ptrs(nranks);
  for (int r = 0; r < nranks; ++r) {
    const std::string path = dir + "/handle." + std::to_string(r);
    if (!WaitForFile(dir, path, n.deadline)) Die(2, "no handle from rank " + std::to_string(r));
    std::ifstream(path, std::ios::binary).read(handles[r].data(), abi::kHandleMaxBytes);
    handle_ptrs[r] = handles[r].data();
  }
  const Result connected = coll->connect(handle_ptrs.data(), nranks, rank, listen_comm, &n.comm);
  if (scenario == "connect_fails") {
    // Every node must refuse alike; the test compares what they print.
    std::printf("connect returned %d\n", static_cast<int>(connected));
    Check(coll->closeListen(listen_comm), "closeListen");
    return connected == Result::kSuccess ? 1 : 0;
  }
  Check(connected, "connect");
  if (scenario == "allreduce") {
    AllReduceScenario(n);
  } else if (scenario == "failure") {
    FailureScenario(n);
  } else if (scenario == "failover") {
    FailoverScenario(n);
  } else {
    Die(1, "unknown scenario " + scenario);
  }
  Check(coll->closeColl(n.comm), "closeColl");
  Check(coll->closeListen(listen_comm), "closeListen");
  return 0;
}

}  // namespace
}  // namespace rs::plugin::test

int main(int argc, char** argv) {
  using namespace rs::plugin::test;
  if (argc != 7) {
    std::fprintf(stderr, "usage: nccl_collnet_rank <plugin.so> <dir> <rank> <nranks> <7|8> <scenario>\n");
    return 1;
  }
  std::string error;
  auto plugin = LoadedPlugin::Open(argv[1], &error);
  if (!plugin) Die(1, error);
  const int rank = std::atoi(argv[3]);
  const int nranks = std::atoi(argv[4]);
  const int version = std::atoi(argv[5]);
  const int rc = version == 7 ? Run(*plugin, plugin->CollV7(), argv[2], rank, nranks, argv[6])
                              : Run(*plugin, plugin->CollV8(), argv[2], rank, nranks, argv[6]);
  std::fflush(stdout);
  return rc;
}
