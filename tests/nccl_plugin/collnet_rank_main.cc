// nccl_collnet_rank: one node's head rank in the CollNet tests, standing in
// for NCCL 2.28's CollNet Chain proxy (transport/coll_net.cc). It dlopens the
// plugin and, per communicator: net and CollNet init (a context each with the
// v11 tables), devices, properties, reduceSupport for every op and type,
// listen, the handle exchange through a shared directory, the collective
// connect with the handles in NCCL's order (by the heads' global ranks, this
// node's index as `rank`), closeListen right after, the staging buffer
// registered 2 x nChannels times (send and receive side of every channel,
// distinct handles), whole-chunk iallreduce calls (32 KiB to 2 MiB; a 4 KiB
// all-reduce moves 32 KiB whose tail differs per node) with up to 64 in
// flight, NULL requests retried, test polled until done and never again, no
// iflush; then every registration released, closeColl, finalize.
// Reducers come from the environment (REDUCER_ADDRS, REDUCER_JOB_TOKEN).
//
//   nccl_collnet_rank <plugin.so> <dir> <node> <order> <7|11> <scenario>
//
// <order> lists the node indices in the order of the handles connect gets,
// e.g. "2,0,1" (nodes = its length). Scenarios:
//   allreduce      batches of chunks in four data types, every element checked
//   recreate       a communicator destroyed and created again twice, the
//                  second time after unloading and reloading the library
//   failure        all-reduces until test() reports an error (a reducer is
//                  killed by the test once "running" is printed)
//   failover       300 float32 chunks, 8 in flight, every result checked,
//                  while the test kills a reducer once "running" is printed:
//                  with failover on, NCCL must see nothing but right results
//   connect_fails  expects connect to fail on every node (settings differ)
// Exit: 0 success, 1 failed check (reason on stderr), 2 timeout.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/half.h"
#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {
namespace {

constexpr auto kTimeout = std::chrono::seconds(120);
constexpr int kChannels = 2;                   // NCCL registers the buffer 2 x nChannels times
constexpr size_t kRegionBytes = 16 << 20;      // the send half; the receive half follows
constexpr int kMaxInFlight = 64;               // NCCL's CollNet proxy at most

[[noreturn]] void Die(int code, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", code == 2 ? "TIMEOUT" : "FAILED", what.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

void Check(Result got, const char* what) {
  if (got != Result::kSuccess) Die(1, std::string(what) + " returned " + std::to_string(static_cast<int>(got)));
}

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

// One iallreduce as NCCL's proxy issues it: whole chunks (`bytes`), of which
// the collective only wrote the first `valid` bytes.
struct Call {
  int dtype;
  size_t bytes;
  size_t valid;
  bool nan_tail = false;  // node 0's tail holds a NaN (float32): no trap, NaN out
};

// Batches of calls that each fit the staging region; a batch is posted in
// full (up to 64 in flight) before its results are checked.
std::vector<std::vector<Call>> Plan(bool short_plan) {
  std::vector<std::vector<Call>> batches;
  // 64 small chunks: 4 KiB all-reduces moving 32 KiB, and full 32-64 KiB chunks.
  std::vector<Call> small;
  for (int i = 0; i < kMaxInFlight; ++i) {
    const int dtypes[] = {abi::kNcclFloat32, abi::kNcclFloat16, abi::kNcclBfloat16, abi::kNcclInt32};
    const int dtype = dtypes[i % 4];
    const size_t bytes = (i % 3 == 2 ? 64 : 32) << 10;
    Call c{dtype, bytes, i % 3 == 0 ? size_t{4096} : bytes};
    c.nan_tail = i == 0;
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

struct Node {
  const LoadedPlugin* plugin = nullptr;
  NetApi net;
  CollApi coll;
  std::string dir;
  int node = 0;
  std::vector<int> order;  // node index of each handle, in connect's order
  int version = 11;
  int round = 0;
  void* comm = nullptr;
  Deadline deadline;
};

void* PostAllReduce(Node& n, void* send, void* recv, size_t count, int dtype, void* send_mh, void* recv_mh) {
  void* request = nullptr;
  while (request == nullptr) {
    Check(n.coll.iallreduce(n.comm, send, recv, count, dtype, abi::kNcclSum, send_mh, recv_mh, &request),
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

// Init, properties and the collective connect of one communicator; returns
// connect's result (the comm is in n.comm on success).
Result OpenCommunicator(Node& n) {
  Check(n.net.init(&TestLogger), "net init");
  // NCCL's commHash: the same on every rank of a communicator.
  Check(n.coll.init(&TestLogger, 0xC011EC7000ull + static_cast<uint64_t>(n.round)), "collnet init");
  int ndev = 0;
  Check(n.coll.devices(&ndev), "collnet devices");
  if (ndev != 1) Die(1, "CollNet reports " + std::to_string(ndev) + " devices with reducers configured");
  abi::PropertiesV11 props{};
  Check(n.coll.getProperties(0, &props), "collnet getProperties");
  if (std::string(props.name) != "lo") Die(1, std::string("CollNet device 0 is ") + props.name);
  if (n.version == 11 && (props.maxCollBytes == 0 || props.maxCollBytes > abi::kMaxNetSizeBytes)) {
    Die(1, "maxCollBytes " + std::to_string(props.maxCollBytes) + " outside (0, 1 TiB]: NCCL would refuse it");
  }
  // NCCL asks for every op 0-3 and every data type.
  for (int op = 0; op < 4; ++op) {
    for (int type = 0; type <= abi::kNcclFloat8e5m2; ++type) {
      int supported = -1;
      Check(n.coll.reduceSupport(type, op, &supported), "reduceSupport");
      if (supported != (type <= abi::kNcclBfloat16 ? 1 : 0)) {
        Die(1, "reduceSupport(" + std::to_string(type) + ", " + std::to_string(op) + ") = " + std::to_string(supported));
      }
    }
  }

  alignas(8) char mine[abi::kHandleMaxBytes] = {};
  void* listen_comm = nullptr;
  Check(n.coll.listen(0, mine, &listen_comm), "listen");
  const std::string prefix = n.dir + "/handle." + std::to_string(n.round) + ".";
  WriteFileAtomic(prefix + std::to_string(n.node), mine, sizeof(mine));
  const int nodes = static_cast<int>(n.order.size());
  std::vector<std::vector<char>> handles(static_cast<size_t>(nodes), std::vector<char>(abi::kHandleMaxBytes));
  std::vector<void*> handle_ptrs;
  for (int i = 0; i < nodes; ++i) {
    const std::string path = prefix + std::to_string(n.order[static_cast<size_t>(i)]);
    if (!WaitForFile(n.dir, path, n.deadline)) Die(2, "no handle from node " + std::to_string(n.order[i]));
    std::ifstream(path, std::ios::binary).read(handles[static_cast<size_t>(i)].data(), abi::kHandleMaxBytes);
    handle_ptrs.push_back(handles[static_cast<size_t>(i)].data());
  }
  const Result connected = n.coll.connect(handle_ptrs.data(), nodes, n.node, listen_comm, &n.comm);
  // NCCL closes the listen comm right after a successful connect, and
  // forgets it (never closes it) after a failed one.
  if (connected == Result::kSuccess) Check(n.coll.closeListen(listen_comm), "closeListen");
  return connected;
}

void CloseCommunicator(Node& n) {
  if (n.comm != nullptr) Check(n.coll.closeColl(n.comm), "closeColl");
  n.comm = nullptr;
  Check(n.coll.finalize(), "collnet finalize");
  Check(n.net.finalize(), "net finalize");
}

// Runs the batches; returns the number of calls verified.
size_t AllReduces(Node& n, const std::vector<std::vector<Call>>& batches) {
  std::vector<uint8_t> staging(2 * kRegionBytes);
  uint8_t* send_region = staging.data();
  uint8_t* recv_region = staging.data() + kRegionBytes;
  // Every channel's send and receive side registers the whole buffer.
  std::vector<void*> send_mh(kChannels), recv_mh(kChannels);
  std::set<void*> distinct;
  for (int c = 0; c < kChannels; ++c) {
    Check(n.coll.regMr(n.comm, staging.data(), staging.size(), abi::kPtrHost, &send_mh[c]), "regMr (send)");
    Check(n.coll.regMr(n.comm, staging.data(), staging.size(), abi::kPtrHost, &recv_mh[c]), "regMr (recv)");
    distinct.insert(send_mh[c]);
    distinct.insert(recv_mh[c]);
  }
  if (distinct.size() != 2 * kChannels) Die(1, "registrations did not give distinct handles");

  size_t verified = 0;
  int call_no = 0;
  for (const std::vector<Call>& batch : batches) {
    std::vector<void*> requests;
    std::vector<size_t> offsets;
    size_t offset = 0;
    for (const Call& c : batch) {
      const size_t elem = ElementSize(c.dtype);
      const size_t count = c.bytes / elem;
      uint8_t* send = send_region + offset;
      for (size_t i = 0; i < count; ++i) {
        Write(send, c.dtype, i, i * elem < c.valid ? Value(n.node, call_no, i) : TailValue(n.node, i));
      }
      if (c.nan_tail && n.node == 0) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(send + c.valid, &nan, 4);
      }
      std::memset(recv_region + offset, 0xEE, c.bytes);
      const int channel = call_no % kChannels;
      requests.push_back(PostAllReduce(n, send, recv_region + offset, count, c.dtype, send_mh[channel],
                                       recv_mh[channel]));
      offsets.push_back(offset);
      offset += c.bytes;
      if (offset > kRegionBytes) Die(1, "batch larger than the staging region");
      ++call_no;
    }
    const int first_call = call_no - static_cast<int>(batch.size());
    for (size_t k = 0; k < batch.size(); ++k) {
      const Call& c = batch[k];
      int size = -1;
      Check(WaitDone(n, requests[k], &size), "test");
      if (size != static_cast<int>(c.bytes)) Die(1, "test reported " + std::to_string(size) + " bytes of " + std::to_string(c.bytes));
      const uint8_t* out = recv_region + offsets[k];
      const size_t elem = ElementSize(c.dtype);
      for (size_t i = 0; i < c.bytes / elem; ++i) {
        double want = 0;
        const int nodes = static_cast<int>(n.order.size());
        for (int r = 0; r < nodes; ++r) {
          want += i * elem < c.valid ? Value(r, first_call + static_cast<int>(k), i) : TailValue(r, i);
        }
        const double got = Read(out, c.dtype, i);
        const bool nan_expected = c.nan_tail && c.dtype == abi::kNcclFloat32 && i * elem == c.valid;
        if (nan_expected ? !std::isnan(got) : got != want) {
          std::ostringstream os;
          os << "call " << first_call + static_cast<int>(k) << " (dtype " << c.dtype << ", " << c.bytes
             << " bytes, " << c.valid << " valid) element " << i << ": got " << got << ", want "
             << (nan_expected ? std::numeric_limits<double>::quiet_NaN() : want);
          Die(1, os.str());
        }
      }
      ++verified;
    }
  }
  // Released as NCCL's proxies free their connections, then closeColl.
  for (int c = 0; c < kChannels; ++c) {
    Check(n.coll.deregMr(n.comm, send_mh[c]), "deregMr (send)");
    Check(n.coll.deregMr(n.comm, recv_mh[c]), "deregMr (recv)");
  }
  return verified;
}

void FailureScenario(Node& n) {
  std::vector<float> buf(1 << 18, 1.0f);
  std::vector<float> out(buf.size());
  void* mh = nullptr;
  Check(n.coll.regMr(n.comm, buf.data(), buf.size() * 4, abi::kPtrHost, &mh), "regMr");
  void* out_mh = nullptr;
  Check(n.coll.regMr(n.comm, out.data(), out.size() * 4, abi::kPtrHost, &out_mh), "regMr");
  for (int i = 0;; ++i) {
    void* req = PostAllReduce(n, buf.data(), out.data(), buf.size(), abi::kNcclFloat32, mh, out_mh);
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
  Check(n.coll.deregMr(n.comm, mh), "deregMr");
  Check(n.coll.deregMr(n.comm, out_mh), "deregMr");
}

void FailoverScenario(Node& n) {
  constexpr int kChunks = 300;
  constexpr int kWindow = 8;
  constexpr size_t kCount = 64 << 10;  // 256 KiB of float32
  const int nodes = static_cast<int>(n.order.size());
  std::vector<float> staging(2 * kWindow * kCount);
  void* mh = nullptr;
  Check(n.coll.regMr(n.comm, staging.data(), staging.size() * 4, abi::kPtrHost, &mh), "regMr");
  auto input = [](int node, int k, size_t i) { return static_cast<float>((node + 1) * (k % 1000) + static_cast<int>(i % 7)); };
  std::vector<void*> requests(kChunks, nullptr);
  auto finish = [&](int k) {
    int size = 0;
    Check(WaitDone(n, requests[static_cast<size_t>(k)], &size), "test");
    const float* out = staging.data() + (kWindow + k % kWindow) * kCount;
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
    float* send = staging.data() + (k % kWindow) * kCount;
    float* recv = staging.data() + (kWindow + k % kWindow) * kCount;
    for (size_t i = 0; i < kCount; ++i) send[i] = input(n.node, k, i);
    requests[static_cast<size_t>(k)] = PostAllReduce(n, send, recv, kCount, abi::kNcclFloat32, mh, mh);
  }
  for (int k = kChunks - kWindow; k < kChunks; ++k) finish(k);
  Check(n.coll.deregMr(n.comm, mh), "deregMr");
  std::printf("node %d: %d all-reduces verified across the failover\n", n.node, kChunks);
}

std::unique_ptr<LoadedPlugin> Load(const std::string& path) {
  std::string error;
  std::unique_ptr<LoadedPlugin> plugin = LoadedPlugin::Open(path, &error);
  if (!plugin) Die(1, error);
  return plugin;
}

void Bind(Node& n, const LoadedPlugin& plugin) {
  n.plugin = &plugin;
  n.net = plugin.Net(n.version == 11 ? 11 : 8);
  n.coll = plugin.Coll(n.version);
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
  if (scenario == "allreduce") {
    std::printf("node %d: %zu all-reduces verified\n", n.node, AllReduces(n, Plan(false)));
  } else if (scenario == "failure") {
    FailureScenario(n);
  } else if (scenario == "failover") {
    FailoverScenario(n);
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
    std::fprintf(stderr, "usage: nccl_collnet_rank <plugin.so> <dir> <node> <order> <7|11> <scenario>\n");
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
