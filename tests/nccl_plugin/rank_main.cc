// nccl_plugin_rank: one "rank" of the multi-process plugin tests, standing in
// for NCCL. It dlopens the plugin, sets up a send comm to its peer and a recv
// comm from it (handles exchanged as files in a shared directory, as NCCL
// exchanges them over its bootstrap network), runs one scenario and exits 0
// on success, 1 on a failed check (reason on stderr), 2 on a timeout.
//
//   nccl_plugin_rank <plugin.so> <dir> <rank 0|1> <table version 7|8|11> <scenario>
//
// Scenarios: sizes, inflight, tags, truncate, nocollnet, peer_exit.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {
namespace {

constexpr auto kTimeout = std::chrono::seconds(60);

struct Rank {
  NetApi api;
  LoadedPlugin* plugin = nullptr;
  std::string dir;
  int rank = 0;
  int peer = 1;
  void* send = nullptr;
  void* recv = nullptr;
  Deadline deadline;
};

[[noreturn]] void Fail(const Rank& r, const std::string& what) {
  std::fprintf(stderr, "rank %d (v%d): FAILED: %s\n", r.rank, r.api.version, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

#define CHECK_OR_FAIL(r, cond, msg)                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::ostringstream os_;                                                         \
      os_ << msg << " [" #cond "] at line " << __LINE__;                              \
      Fail(r, os_.str());                                                             \
    }                                                                                 \
  } while (0)

// A result that is not what we expect; kInProgress means our deadline hit.
void Expect(const Rank& r, Result got, Result want, const std::string& what) {
  if (got == want) return;
  if (got == Result::kInProgress) {
    std::fprintf(stderr, "rank %d: TIMEOUT: %s\n", r.rank, what.c_str());
    std::_Exit(2);
  }
  Fail(r, what + ": result " + std::to_string(static_cast<int>(got)) + ", expected " +
              std::to_string(static_cast<int>(want)));
}

void Setup(Rank& r) {
  int ndev = 0;
  Expect(r, r.api.init(&TestLogger), Result::kSuccess, "init");
  Expect(r, r.api.devices(&ndev), Result::kSuccess, "devices");
  CHECK_OR_FAIL(r, ndev >= 1, "no devices");
  abi::PropertiesV11 props{};
  Expect(r, r.api.getProperties(0, &props), Result::kSuccess, "getProperties");
  CHECK_OR_FAIL(r, std::string(props.name) == "lo", "device 0 is " << props.name << ", REDUCER_SOCKET_IFNAME=lo");
  CHECK_OR_FAIL(r, props.ptrSupport == abi::kPtrHost, "ptrSupport " << props.ptrSupport);
  CHECK_OR_FAIL(r, props.maxRecvs == 1 && props.netDeviceType == abi::kNetDeviceHost, "properties");
  if (r.api.version == 11) {
    // NCCL 2.28 refuses a device whose limits are 0 or above 1 TiB.
    CHECK_OR_FAIL(r, props.maxP2pBytes > 0 && props.maxP2pBytes <= abi::kMaxNetSizeBytes, "maxP2pBytes");
    CHECK_OR_FAIL(r, props.vProps.ndevs == 1 && props.vProps.devs[0] == 0, "vProps");
  }

  alignas(8) char mine[abi::kHandleMaxBytes] = {};
  alignas(8) char theirs[abi::kHandleMaxBytes] = {};
  void* listen_comm = nullptr;
  Expect(r, r.api.listen(0, mine, &listen_comm), Result::kSuccess, "listen");
  WriteFileAtomic(r.dir + "/handle." + std::to_string(r.rank), mine, sizeof(mine));
  const std::string peer_file = r.dir + "/handle." + std::to_string(r.peer);
  if (!WaitForFile(r.dir, peer_file, r.deadline)) Expect(r, Result::kInProgress, Result::kSuccess, "peer handle");
  std::ifstream in(peer_file, std::ios::binary);
  in.read(theirs, sizeof(theirs));
  CHECK_OR_FAIL(r, in.gcount() == static_cast<std::streamsize>(sizeof(theirs)), "short handle file");
  Expect(r, ConnectAndAccept(r.api, 0, theirs, listen_comm, &r.send, &r.recv, r.deadline), Result::kSuccess,
         "connect/accept");
  Expect(r, r.api.closeListen(listen_comm), Result::kSuccess, "closeListen");
}

void Teardown(Rank& r) {
  Expect(r, r.api.closeSend(r.send), Result::kSuccess, "closeSend");
  Expect(r, r.api.closeRecv(r.recv), Result::kSuccess, "closeRecv");
  Expect(r, r.api.finalize(), Result::kSuccess, "finalize");  // v11: the communicator's context
}

// Sends `sizes` to the peer while receiving the peer's, into buffers of
// capacity size + extra; checks sizes reported and content.
void Exchange(Rank& r, const std::vector<int>& sizes, int extra, int tag, int first_msg) {
  const size_t n = sizes.size();
  std::vector<std::vector<uint8_t>> out(n), in(n);
  std::vector<void*> sreq(n), rreq(n);
  for (size_t i = 0; i < n; ++i) {
    in[i].assign(static_cast<size_t>(sizes[i] + extra), 0xEE);
    Expect(r, PostRecv(r.api, r.recv, in[i].data(), sizes[i] + extra, tag, &rreq[i], r.deadline), Result::kSuccess,
           "irecv");
  }
  for (size_t i = 0; i < n; ++i) {
    out[i].resize(static_cast<size_t>(sizes[i]));
    FillPattern(out[i].data(), out[i].size(), r.rank, first_msg + static_cast<int>(i));
    Expect(r, PostSend(r.api, r.send, out[i].data(), sizes[i], tag, &sreq[i], r.deadline), Result::kSuccess,
           "isend");
  }
  for (size_t i = 0; i < n; ++i) {
    int size = -1;
    Expect(r, Wait(r.api, sreq[i], &size, r.deadline), Result::kSuccess, "send " + std::to_string(i));
    CHECK_OR_FAIL(r, size == sizes[i], "send " << i << " reported " << size);
  }
  for (size_t i = 0; i < n; ++i) {
    int size = -1;
    Expect(r, Wait(r.api, rreq[i], &size, r.deadline), Result::kSuccess, "recv " + std::to_string(i));
    CHECK_OR_FAIL(r, size == sizes[i], "recv " << i << " reported " << size << " bytes, peer sent " << sizes[i]);
    long bad = CheckPattern(in[i].data(), static_cast<size_t>(size), r.peer, first_msg + static_cast<int>(i));
    CHECK_OR_FAIL(r, bad < 0, "recv " << i << " (" << size << " bytes) wrong at byte " << bad);
  }
}

void ScenarioSizes(Rank& r) {
  ResetLogCounts();
  const std::vector<int> sizes = {0, 1, 4096, 65536, 65537, (1 << 20) + 3};
  Exchange(r, sizes, /*extra=*/64, /*tag=*/1, 0);  // received size < posted size
  Exchange(r, sizes, /*extra=*/0, /*tag=*/1, 100);  // exact fit
  // Nothing per operation above TRACE.
  CHECK_OR_FAIL(r, LogCount(abi::kLogInfo) == 0 && LogCount(abi::kLogWarn) == 0,
                "data transfers logged " << LogCount(abi::kLogInfo) << " INFO and " << LogCount(abi::kLogWarn)
                                         << " WARN lines");
}

void ScenarioInflight(Rank& r) {
  constexpr int kN = abi::kMaxRequestsPerComm;
  auto size_of = [](int i) { return i % 4 == 0 ? 300'000 + i : 1000 + i; };
  std::vector<std::vector<uint8_t>> out(kN + 1), in(kN + 1);
  std::vector<void*> sreq(kN + 1), rreq(kN + 1);
  for (int i = 0; i <= kN; ++i) {
    in[i].assign(static_cast<size_t>(size_of(i)), 0);
    out[i].resize(static_cast<size_t>(size_of(i)));
    FillPattern(out[i].data(), out[i].size(), r.rank, i);
  }
  auto irecv_once = [&](int i) {
    void* bufs[1] = {in[i].data()};
    size_t sizes[1] = {static_cast<size_t>(size_of(i))};
    int tags[1] = {3};
    void* mh[1] = {nullptr};
    Expect(r, r.api.irecv(r.recv, 1, bufs, sizes, tags, mh, &rreq[i]), Result::kSuccess, "irecv");
  };
  for (int i = 0; i < kN; ++i) {
    irecv_once(i);
    CHECK_OR_FAIL(r, rreq[i] != nullptr, "irecv " << i << " of " << kN << " refused");
  }
  irecv_once(kN);
  CHECK_OR_FAIL(r, rreq[kN] == nullptr, "irecv beyond " << kN << " in flight was accepted");
  for (int i = 0; i < kN; ++i) {
    Expect(r, r.api.isend(r.send, out[i].data(), size_of(i), 3, nullptr, &sreq[i]), Result::kSuccess, "isend");
    CHECK_OR_FAIL(r, sreq[i] != nullptr, "isend " << i << " of " << kN << " refused");
  }
  Expect(r, r.api.isend(r.send, out[kN].data(), size_of(kN), 3, nullptr, &sreq[kN]), Result::kSuccess, "isend");
  CHECK_OR_FAIL(r, sreq[kN] == nullptr, "isend beyond " << kN << " in flight was accepted");
  // NCCL's way: keep testing, retry the refused posts once slots free. A
  // request progresses while it is tested (as in NCCL's proxy loop), so
  // wait for our send before our receive: the peer's send needs our
  // clear-to-send, never the other way round.
  int size = 0;
  Expect(r, Wait(r.api, sreq[0], &size, r.deadline), Result::kSuccess, "send 0");
  Expect(r, PostSend(r.api, r.send, out[kN].data(), size_of(kN), 3, &sreq[kN], r.deadline), Result::kSuccess,
         "isend retry");
  Expect(r, Wait(r.api, rreq[0], &size, r.deadline), Result::kSuccess, "recv 0");
  CHECK_OR_FAIL(r, CheckPattern(in[0].data(), in[0].size(), r.peer, 0) < 0, "recv 0 content");
  Expect(r, PostRecv(r.api, r.recv, in[kN].data(), size_of(kN), 3, &rreq[kN], r.deadline), Result::kSuccess,
         "irecv retry");
  for (int i = 1; i <= kN; ++i) {
    Expect(r, Wait(r.api, sreq[i], &size, r.deadline), Result::kSuccess, "send " + std::to_string(i));
    Expect(r, Wait(r.api, rreq[i], &size, r.deadline), Result::kSuccess, "recv " + std::to_string(i));
    CHECK_OR_FAIL(r, size == size_of(i), "recv " << i << " size " << size);
    long bad = CheckPattern(in[i].data(), in[i].size(), r.peer, i);
    CHECK_OR_FAIL(r, bad < 0, "recv " << i << " matched out of order or corrupt at byte " << bad);
  }
}

// Posts one send and one receive that cannot match; both must fail with
// InvalidUsage on both ranks, and the connection must still work after.
void ExpectRejected(Rank& r, int send_size, int send_tag, int recv_size, int recv_tag, const char* what) {
  std::vector<uint8_t> out(static_cast<size_t>(send_size), 1), in(static_cast<size_t>(recv_size));
  void* sreq = nullptr;
  void* rreq = nullptr;
  Expect(r, PostRecv(r.api, r.recv, in.data(), recv_size, recv_tag, &rreq, r.deadline), Result::kSuccess, "irecv");
  Expect(r, PostSend(r.api, r.send, out.data(), send_size, send_tag, &sreq, r.deadline), Result::kSuccess, "isend");
  int size = 0;
  Expect(r, Wait(r.api, sreq, &size, r.deadline), Result::kInvalidUsage, std::string(what) + " (send side)");
  Expect(r, Wait(r.api, rreq, &size, r.deadline), Result::kInvalidUsage, std::string(what) + " (receive side)");
}

void ScenarioTags(Rank& r) {
  for (int tag : {0, 7, 12345, -1}) Exchange(r, {10, 200'000}, 0, tag, tag & 0xff);
  ExpectRejected(r, 100, /*send tag*/ 7, 100, /*recv tag*/ 8, "tag mismatch");
  ExpectRejected(r, 300'000, 7, 300'000, 8, "tag mismatch, large");
  Exchange(r, {10, (1 << 20) + 3}, 0, 8, 50);  // still in step
}

void ScenarioTruncate(Rank& r) {
  ExpectRejected(r, 1000, 1, 100, 1, "small send into smaller receive");
  ExpectRejected(r, (1 << 20) + 3, 1, 1 << 20, 1, "large send into smaller receive");
  ExpectRejected(r, 1, 1, 0, 1, "one byte into an empty receive");
  Exchange(r, {100, (1 << 20) + 3}, 1 << 20, 1, 60);  // still in step; smaller than posted is fine
}

void ScenarioNoCollNet(Rank& r, int version) {
  // NCCL 2.28 takes CollNet v11, older releases v7 (never v8).
  CollApi coll = r.plugin->Coll(version == 11 ? 11 : 7);
  int ndev = -1;
  int supported = -1;
  Expect(r, coll.init(&TestLogger, 42), Result::kSuccess, "CollNet init");
  Expect(r, coll.devices(&ndev), Result::kSuccess, "CollNet devices");
  Expect(r, coll.reduceSupport(abi::kNcclFloat32, abi::kNcclSum, &supported), Result::kSuccess, "reduceSupport");
  CHECK_OR_FAIL(r, supported == 1, "float32 sum unsupported");
  Expect(r, coll.reduceSupport(abi::kNcclBfloat16, abi::kNcclMax, &supported), Result::kSuccess, "reduceSupport");
  CHECK_OR_FAIL(r, supported == 1, "bfloat16 max unsupported");
  Expect(r, coll.reduceSupport(abi::kNcclFloat8e4m3, abi::kNcclSum, &supported), Result::kSuccess, "reduceSupport");
  CHECK_OR_FAIL(r, supported == 0, "float8 reported as supported");
  CHECK_OR_FAIL(r, ndev == 0, "CollNet reports " << ndev << " devices with no reducers configured");
  Expect(r, coll.finalize(), Result::kSuccess, "CollNet finalize");
  Exchange(r, {0, 1, (1 << 20) + 3}, 0, 0, 70);  // point-to-point unaffected
}

void ScenarioPeerExit(Rank& r) {
  const std::string ready = r.dir + "/ready";
  if (r.rank == 1) {
    // Die without closing anything once rank 0 has its comms, like a crash.
    if (!WaitForFile(r.dir, ready, r.deadline)) Expect(r, Result::kInProgress, Result::kSuccess, "ready file");
    std::_Exit(0);
  }
  WriteFileAtomic(ready, "x", 1);
  std::vector<uint8_t> in(1 << 20), out(1 << 20);
  void* rreq = nullptr;
  void* sreq = nullptr;
  // The peer may be seen gone when the receive is posted or while it is
  // tested: either way an error, never a hang.
  Result got = PostRecv(r.api, r.recv, in.data(), in.size(), 0, &rreq, r.deadline);
  int size = 0;
  if (got == Result::kSuccess) got = Wait(r.api, rreq, &size, r.deadline);
  CHECK_OR_FAIL(r, got == Result::kRemoteError || got == Result::kSystemError,
                "receive from a dead peer: result " << static_cast<int>(got));
  Result posted = PostSend(r.api, r.send, out.data(), out.size(), 0, &sreq, r.deadline);
  if (posted == Result::kSuccess) posted = Wait(r.api, sreq, &size, r.deadline);
  CHECK_OR_FAIL(r, posted == Result::kRemoteError || posted == Result::kSystemError,
                "send to a dead peer: result " << static_cast<int>(posted));
}

}  // namespace
}  // namespace rs::plugin::test

int main(int argc, char** argv) {
  using namespace rs::plugin::test;
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s <plugin.so> <dir> <rank> <version> <scenario>\n", argv[0]);
    return 64;
  }
  const std::string scenario = argv[5];
  const int version = std::atoi(argv[4]);
  Rank r;
  r.dir = argv[2];
  r.rank = std::atoi(argv[3]);
  r.peer = 1 - r.rank;
  r.deadline = After(std::chrono::duration_cast<std::chrono::milliseconds>(kTimeout));
  std::string error;
  std::unique_ptr<LoadedPlugin> plugin = LoadedPlugin::Open(argv[1], &error);
  if (!plugin) {
    std::fprintf(stderr, "rank %d: %s\n", r.rank, error.c_str());
    return 1;
  }
  r.plugin = plugin.get();
  r.api = plugin->Net(version);
  Setup(r);
  if (scenario == "sizes") {
    ScenarioSizes(r);
  } else if (scenario == "inflight") {
    ScenarioInflight(r);
  } else if (scenario == "tags") {
    ScenarioTags(r);
  } else if (scenario == "truncate") {
    ScenarioTruncate(r);
  } else if (scenario == "nocollnet") {
    ScenarioNoCollNet(r, version);
  } else if (scenario == "peer_exit") {
    ScenarioPeerExit(r);
  } else {
    Fail(r, "unknown scenario " + scenario);
  }
  Teardown(r);
  plugin.reset();  // dlclose: must not hang or crash with comms closed
  return 0;
}
