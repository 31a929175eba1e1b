#include "tests/nccl_plugin/collnet_node.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

namespace rs::plugin::test {
namespace {

// getProperties as each proxy setup asks it: NCCL refuses a device whose
// maxCollBytes is outside (0, 1 TiB] (coll_net.cc, sendProxySetup).
void CheckProperties(Node& n) {
  abi::PropertiesV11 props{};
  Check(n.coll.getProperties(0, &props), "collnet getProperties");
  if (std::string(props.name) != "lo") Die(1, std::string("CollNet device 0 is ") + props.name);
  if (n.version == 11 && (props.maxCollBytes == 0 || props.maxCollBytes > abi::kMaxNetSizeBytes)) {
    Die(1, "maxCollBytes " + std::to_string(props.maxCollBytes) + " outside (0, 1 TiB]: NCCL would refuse it");
  }
}

// The handles of every node, in connect's order (NCCL's bootstrap
// all-gather, on the main thread).
std::vector<std::vector<char>> AllGatherHandles(Node& n, const char* mine) {
  const std::string prefix = n.dir + "/handle." + std::to_string(n.round) + ".";
  WriteFileAtomic(prefix + std::to_string(n.node), mine, abi::kHandleMaxBytes);
  std::vector<std::vector<char>> handles;
  for (int node : n.order) {
    const std::string path = prefix + std::to_string(node);
    if (!WaitForFile(n.dir, path, n.deadline)) Die(2, "no handle from node " + std::to_string(node));
    handles.emplace_back(abi::kHandleMaxBytes);
    std::ifstream(path, std::ios::binary).read(handles.back().data(), abi::kHandleMaxBytes);
  }
  return handles;
}

// NCCL's collNetSupportMatrix (ncclCollNetSetup): once every channel is
// connected, each head asks for every type (outer loop) and op 0-3 on the
// main thread, the answers (bit 1 yes, bit 0 no; nothing from non-heads)
// are all-gathered, and a pair is used only if someone said yes and no one
// said no. NCCL 2.12 - 2.23 know 10 types (no float8).
void AgreeOnSupport(Node& n) {
  const int types = n.version >= 7 ? kNumTypes : abi::kNcclBfloat16 + 1;
  uint8_t mine[kNumOps][kNumTypes] = {};
  for (int type = 0; type < types; ++type) {
    for (int op = 0; op < kNumOps; ++op) {
      int supported = -1;
      Check(n.coll.reduceSupport(type, op, &supported), "reduceSupport");
      // The plugin reduces every type but float8, with every op.
      if (supported != (type <= abi::kNcclBfloat16 ? 1 : 0)) {
        Die(1, "reduceSupport(" + std::to_string(type) + ", " + std::to_string(op) + ") = " + std::to_string(supported));
      }
      mine[op][type] = static_cast<uint8_t>(1 << (supported ? 1 : 0));
    }
  }
  const std::string prefix = n.dir + "/support." + std::to_string(n.round) + ".";
  WriteFileAtomic(prefix + std::to_string(n.node), mine, sizeof(mine));
  uint8_t accum[kNumOps][kNumTypes] = {};
  for (int node : n.order) {
    const std::string path = prefix + std::to_string(node);
    if (!WaitForFile(n.dir, path, n.deadline)) Die(2, "no reduceSupport answers from node " + std::to_string(node));
    uint8_t theirs[kNumOps][kNumTypes] = {};
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(theirs), sizeof(theirs));
    for (int op = 0; op < kNumOps; ++op) {
      for (int type = 0; type < kNumTypes; ++type) accum[op][type] |= theirs[op][type];
    }
  }
  for (int op = 0; op < kNumOps; ++op) {
    for (int type = 0; type < kNumTypes; ++type) n.agreed[op][type] = accum[op][type] == (1 << 1);
  }
}

// The registration of one side of one channel (recvProxyConnect /
// sendProxyConnect): the whole shared buffer, a new handle each time.
void Register(Node& n, const char* what, void** mhandle) {
  OnProxy(n, what, [&] {
    CheckProperties(n);
    Check(n.coll.regMr(n.comm, n.staging.data(), n.staging.size(), abi::kPtrHost, mhandle), what);
  });
}

}  // namespace

void Die(int code, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", code == 2 ? "TIMEOUT" : "FAILED", what.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

void Check(Result got, const char* what) {
  if (got != Result::kSuccess) Die(1, std::string(what) + " returned " + std::to_string(static_cast<int>(got)));
}

void OnProxy(Node& n, const char* what, const std::function<void()>& step) {
  if (!n.threads->OnProxy(step)) Die(2, std::string(what) + " did not return on the proxy thread");
}

void OnProgress(Node& n, const char* what, const std::function<void()>& step) {
  if (!n.threads->OnProgress(step)) Die(2, std::string(what) + " did not return on the progress thread");
}

Result OpenCommunicator(Node& n) {
  // ncclNetInit on the thread creating the communicator.
  Check(n.net.init(&TestLogger), "net init");
  int ndev = 0;
  if (n.first_comm) {
    Check(n.net.devices(&ndev), "net devices");
    if (ndev < 1) Die(1, "the net reports no devices");
  }
  // NCCL's commHash: the same on every rank of a communicator.
  Check(n.coll.init(&TestLogger, 0xC011EC7000ull + static_cast<uint64_t>(n.round)), "collnet init");
  if (n.first_comm) {
    Check(n.coll.devices(&ndev), "collnet devices");
    if (ndev != 1) Die(1, "CollNet reports " + std::to_string(ndev) + " devices with reducers configured");
  }
  n.first_comm = false;
  CheckProperties(n);  // the topology search

  n.threads = std::make_unique<ProxyThreads>(n.deadline);
  alignas(8) char mine[abi::kHandleMaxBytes] = {};
  void* listen_comm = nullptr;
  OnProxy(n, "listen", [&] {
    CheckProperties(n);
    Check(n.coll.listen(0, mine, &listen_comm), "listen");
  });
  std::vector<std::vector<char>> handles = AllGatherHandles(n, mine);
  std::vector<void*> handle_ptrs;
  for (std::vector<char>& h : handles) handle_ptrs.push_back(h.data());
  Result connected = Result::kInternalError;
  OnProxy(n, "connect", [&] {
    connected = n.coll.connect(handle_ptrs.data(), static_cast<int>(handle_ptrs.size()), n.node, listen_comm, &n.comm);
    // NCCL closes the listen comm right after a successful connect, and
    // forgets it (never closes it) after a failed one.
    if (connected == Result::kSuccess) Check(n.coll.closeListen(listen_comm), "closeListen");
  });
  if (connected != Result::kSuccess) return connected;

  // Without GPUDirect, one pinned host buffer for all channels, zeroed
  // (coll_net.cc sharedBuffersInit), registered by every channel's receive
  // side, then its send side.
  n.staging.assign(2 * kRegionBytes, 0);
  n.send_mh.assign(kChannels, nullptr);
  n.recv_mh.assign(kChannels, nullptr);
  for (int c = 0; c < kChannels; ++c) {
    Register(n, "regMr (receive side)", &n.recv_mh[static_cast<size_t>(c)]);
    Register(n, "regMr (send side)", &n.send_mh[static_cast<size_t>(c)]);
  }
  std::set<void*> distinct(n.send_mh.begin(), n.send_mh.end());
  distinct.insert(n.recv_mh.begin(), n.recv_mh.end());
  if (distinct.size() != 2 * kChannels || distinct.count(nullptr) != 0) {
    Die(1, "registrations did not give distinct non-NULL handles");
  }
  AgreeOnSupport(n);
  return connected;
}

void CloseCommunicator(Node& n) {
  // ncclProxyService on stop: the progress thread first, then every
  // connection freed in the order it was set up; the collComm's last
  // reference closes it.
  n.threads->StopProgress();
  OnProxy(n, "deregMr / closeColl", [&] {
    for (size_t c = 0; c < n.recv_mh.size(); ++c) {
      Check(n.coll.deregMr(n.comm, n.recv_mh[c]), "deregMr (receive side)");
      Check(n.coll.deregMr(n.comm, n.send_mh[c]), "deregMr (send side)");
    }
    if (n.comm != nullptr) Check(n.coll.closeColl(n.comm), "closeColl");
  });
  n.threads.reset();
  n.comm = nullptr;
  n.send_mh.clear();
  n.recv_mh.clear();
  n.staging.clear();
  // commFree: ncclNetFinalize finalizes the net, then CollNet
  // (plugin/net.cc, ncclNetPluginFinalize).
  Check(n.net.finalize(), "net finalize");
  Check(n.coll.finalize(), "collnet finalize");
}

int NetOp(int op) { return op == abi::kNcclAvg || op > abi::kNcclAvg ? abi::kNcclSum : op; }

bool UsesCollNet(const Node& n, int dtype, int op) {
  return dtype >= 0 && dtype < kNumTypes && n.agreed[NetOp(op)][dtype];
}

}  // namespace rs::plugin::test
