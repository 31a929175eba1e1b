// nccl_plugin_rank: one "rank" of the multi-process plugin tests, standing in
// for NCCL. It dlopens the plugin, sets up a send comm to its peer and a recv
// comm from it (handles exchanged as files in a shared directory, as NCCL
// exchanges them over its bootstrap network), runs one scenario and exits 0
// on success, 1 on a failed check (reason on stderr), 2 on a timeout.
// As NCCL 2.28.9 (plugin/net.cc, transport/net.cc, proxy.cc): net and
// CollNet init and devices on the main thread; listen, connect, accept,
// closeListen and regMr on a proxy thread; isend, irecv and test on a
// progress thread, with the handle regMr gave for the buffer the data lies
// in, and NCCL's tags (the sender's rank on both sides); deregMr and close
// on the proxy thread once the progress thread stopped; finalize on the main
// thread. CollNet, with no reducers configured, reports no devices, so NCCL
// never finalizes its context (2.28 finalizes only an enabled CollNet).
//
//   nccl_plugin_rank <plugin.so> <dir> <rank 0|1> <table version 5|6|7|8|11> <scenario>
//
// Scenarios: sizes, inflight, tags, truncate, nocollnet, peer_exit.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/nccl_plugin/nccl_proxy_threads.h"
#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {
namespace {

constexpr auto kTimeout = std::chrono::seconds(60);
constexpr size_t kArenaBytes = 8 << 20;

// A connection's registered buffer, from which the scenarios carve their
// messages: NCCL registers its buffers when it connects and sends from
// inside them, never from memory the plugin has not seen.
struct Arena {
  std::vector<uint8_t> mem = std::vector<uint8_t>(kArenaBytes);
  void* mhandle = nullptr;
  size_t used = 0;
};

struct Rank {
  NetApi api;
  LoadedPlugin* plugin = nullptr;
  std::string dir;
  int rank = 0;
  int peer = 1;
  void* send = nullptr;
  void* recv = nullptr;
  Arena out;  // registered on the send comm
  Arena in;   // registered on the recv comm
  CollApi coll;
  int coll_devices = -1;
  std::unique_ptr<ProxyThreads> threads;
  Deadline deadline;
};

// The tags NCCL passes: isend its own rank, irecv the sender's.
struct Tags {
  int send;
  int recv;
};
Tags NcclTags(const Rank& r) { return {r.rank, r.peer}; }

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

// Runs a step on the proxy / progress thread; one that does not return by
// the deadline ends the process.
void OnProxy(Rank& r, const char* what, const std::function<void()>& step) {
  if (!r.threads->OnProxy(step)) Expect(r, Result::kInProgress, Result::kSuccess, what);
}
void OnProgress(Rank& r, const char* what, const std::function<void()>& step) {
  if (!r.threads->OnProgress(step)) Expect(r, Result::kInProgress, Result::kSuccess, what);
}

// `bytes` of the arena (64-byte aligned). Everything taken before is free
// again once its transfers are done: callers Reset between exchanges.
uint8_t* Take(Rank& r, Arena& a, size_t bytes) {
  const size_t at = (a.used + 63) & ~size_t{63};
  CHECK_OR_FAIL(r, at + bytes <= a.mem.size(), "the scenario needs more than " << a.mem.size() << " registered bytes");
  a.used = at + bytes;
  return a.mem.data() + at;
}
void Reset(Rank& r) { r.out.used = r.in.used = 0; }

void Setup(Rank& r, int version) {
  // ncclNetInit: net init and devices, then CollNet's, on the main thread.
  int ndev = 0;
  Expect(r, r.api.init(&TestLogger), Result::kSuccess, "init");
  Expect(r, r.api.devices(&ndev), Result::kSuccess, "devices");
  CHECK_OR_FAIL(r, ndev >= 1, "no devices");
  // NCCL 2.28 takes CollNet v11, 2.19 - 2.27 v7 (never v8), 2.13 - 2.18
  // v6, 2.12 v5: the same version as the net table below v7.
  r.coll = r.plugin->Coll(version == 11 ? 11 : version >= 7 ? 7 : version);
  Expect(r, r.coll.init(&TestLogger, 42), Result::kSuccess, "CollNet init");
  Expect(r, r.coll.devices(&r.coll_devices), Result::kSuccess, "CollNet devices");
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

  r.threads = std::make_unique<ProxyThreads>(r.deadline);
  alignas(8) char mine[abi::kHandleMaxBytes] = {};
  alignas(8) char theirs[abi::kHandleMaxBytes] = {};
  void* listen_comm = nullptr;
  OnProxy(r, "listen", [&] { Expect(r, r.api.listen(0, mine, &listen_comm), Result::kSuccess, "listen"); });
  WriteFileAtomic(r.dir + "/handle." + std::to_string(r.rank), mine, sizeof(mine));
  const std::string peer_file = r.dir + "/handle." + std::to_string(r.peer);
  if (!WaitForFile(r.dir, peer_file, r.deadline)) Expect(r, Result::kInProgress, Result::kSuccess, "peer handle");
  std::ifstream in(peer_file, std::ios::binary);
  in.read(theirs, sizeof(theirs));
  CHECK_OR_FAIL(r, in.gcount() == static_cast<std::streamsize>(sizeof(theirs)), "short handle file");
  OnProxy(r, "connect/accept", [&] {
    Expect(r, ConnectAndAccept(r.api, 0, theirs, listen_comm, &r.send, &r.recv, r.deadline), Result::kSuccess,
           "connect/accept");
    Expect(r, r.api.closeListen(listen_comm), Result::kSuccess, "closeListen");
    Expect(r, r.api.regMr(r.send, r.out.mem.data(), r.out.mem.size(), abi::kPtrHost, &r.out.mhandle),
           Result::kSuccess, "regMr (send comm)");
    Expect(r, r.api.regMr(r.recv, r.in.mem.data(), r.in.mem.size(), abi::kPtrHost, &r.in.mhandle), Result::kSuccess,
           "regMr (recv comm)");
  });
  CHECK_OR_FAIL(r, r.out.mhandle != nullptr && r.in.mhandle != nullptr, "regMr gave a NULL handle");
}

void Teardown(Rank& r) {
  // ncclProxyService on stop: the progress thread first, then the
  // connections freed on the proxy thread; finalize from the main thread.
  r.threads->StopProgress();
  OnProxy(r, "deregMr / close", [&] {
    Expect(r, r.api.deregMr(r.send, r.out.mhandle), Result::kSuccess, "deregMr (send comm)");
    Expect(r, r.api.closeSend(r.send), Result::kSuccess, "closeSend");
    Expect(r, r.api.deregMr(r.recv, r.in.mhandle), Result::kSuccess, "deregMr (recv comm)");
    Expect(r, r.api.closeRecv(r.recv), Result::kSuccess, "closeRecv");
  });
  r.threads.reset();
  Expect(r, r.api.finalize(), Result::kSuccess, "finalize");  // v11: the communicator's context
  // CollNet with devices: finalized after the net (plugin/net.cc); without,
  // never.
  if (r.coll_devices > 0) Expect(r, r.coll.finalize(), Result::kSuccess, "CollNet finalize");
}

// Sends `sizes` to the peer while receiving the peer's, into buffers of
// capacity size + extra; checks sizes reported and content.
void Exchange(Rank& r, const std::vector<int>& sizes, int extra, Tags tags, int first_msg) {
  const size_t n = sizes.size();
  Reset(r);
  std::vector<uint8_t*> out(n), in(n);
  std::vector<void*> sreq(n), rreq(n);
  for (size_t i = 0; i < n; ++i) {
    in[i] = Take(r, r.in, static_cast<size_t>(sizes[i] + extra));
    std::memset(in[i], 0xEE, static_cast<size_t>(sizes[i] + extra));
    Expect(r, PostRecv(r.api, r.recv, in[i], sizes[i] + extra, tags.recv, &rreq[i], r.deadline, r.in.mhandle),
           Result::kSuccess, "irecv");
  }
  for (size_t i = 0; i < n; ++i) {
    out[i] = Take(r, r.out, static_cast<size_t>(sizes[i]));
    FillPattern(out[i], static_cast<size_t>(sizes[i]), r.rank, first_msg + static_cast<int>(i));
    Expect(r, PostSend(r.api, r.send, out[i], sizes[i], tags.send, &sreq[i], r.deadline, r.out.mhandle),
           Result::kSuccess, "isend");
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
    long bad = CheckPattern(in[i], static_cast<size_t>(size), r.peer, first_msg + static_cast<int>(i));
    CHECK_OR_FAIL(r, bad < 0, "recv " << i << " (" << size << " bytes) wrong at byte " << bad);
  }
}

void ScenarioSizes(Rank& r) {
  ResetLogCounts();
  const std::vector<int> sizes = {0, 1, 4096, 65536, 65537, (1 << 20) + 3};
  Exchange(r, sizes, /*extra=*/64, NcclTags(r), 0);  // received size < posted size
  Exchange(r, sizes, /*extra=*/0, NcclTags(r), 100);  // exact fit
  // Nothing per operation above TRACE.
  CHECK_OR_FAIL(r, LogCount(abi::kLogInfo) == 0 && LogCount(abi::kLogWarn) == 0,
                "data transfers logged " << LogCount(abi::kLogInfo) << " INFO and " << LogCount(abi::kLogWarn)
                                         << " WARN lines");
}

void ScenarioInflight(Rank& r) {
  constexpr int kN = abi::kMaxRequestsPerComm;
  auto size_of = [](int i) { return i % 4 == 0 ? 300'000 + i : 1000 + i; };
  const Tags tags = NcclTags(r);
  Reset(r);
  std::vector<uint8_t*> out(kN + 1), in(kN + 1);
  std::vector<void*> sreq(kN + 1), rreq(kN + 1);
  for (int i = 0; i <= kN; ++i) {
    in[i] = Take(r, r.in, static_cast<size_t>(size_of(i)));
    out[i] = Take(r, r.out, static_cast<size_t>(size_of(i)));
    FillPattern(out[i], static_cast<size_t>(size_of(i)), r.rank, i);
  }
  auto irecv_once = [&](int i) {
    void* bufs[1] = {in[i]};
    size_t sizes[1] = {static_cast<size_t>(size_of(i))};
    int recv_tags[1] = {tags.recv};
    void* mh[1] = {r.in.mhandle};
    Expect(r, r.api.irecv(r.recv, 1, bufs, sizes, recv_tags, mh, &rreq[i]), Result::kSuccess, "irecv");
  };
  for (int i = 0; i < kN; ++i) {
    irecv_once(i);
    CHECK_OR_FAIL(r, rreq[i] != nullptr, "irecv " << i << " of " << kN << " refused");
  }
  irecv_once(kN);
  CHECK_OR_FAIL(r, rreq[kN] == nullptr, "irecv beyond " << kN << " in flight was accepted");
  for (int i = 0; i < kN; ++i) {
    Expect(r, r.api.isend(r.send, out[i], size_of(i), tags.send, r.out.mhandle, &sreq[i]), Result::kSuccess, "isend");
    CHECK_OR_FAIL(r, sreq[i] != nullptr, "isend " << i << " of " << kN << " refused");
  }
  Expect(r, r.api.isend(r.send, out[kN], size_of(kN), tags.send, r.out.mhandle, &sreq[kN]), Result::kSuccess,
         "isend");
  CHECK_OR_FAIL(r, sreq[kN] == nullptr, "isend beyond " << kN << " in flight was accepted");
  // NCCL's way: keep testing, retry the refused posts once slots free. A
  // request progresses while it is tested (as in NCCL's proxy loop), so
  // wait for our send before our receive: the peer's send needs our
  // clear-to-send, never the other way round.
  int size = 0;
  Expect(r, Wait(r.api, sreq[0], &size, r.deadline), Result::kSuccess, "send 0");
  Expect(r, PostSend(r.api, r.send, out[kN], size_of(kN), tags.send, &sreq[kN], r.deadline, r.out.mhandle),
         Result::kSuccess, "isend retry");
  Expect(r, Wait(r.api, rreq[0], &size, r.deadline), Result::kSuccess, "recv 0");
  CHECK_OR_FAIL(r, CheckPattern(in[0], static_cast<size_t>(size_of(0)), r.peer, 0) < 0, "recv 0 content");
  Expect(r, PostRecv(r.api, r.recv, in[kN], size_of(kN), tags.recv, &rreq[kN], r.deadline, r.in.mhandle),
         Result::kSuccess, "irecv retry");
  for (int i = 1; i <= kN; ++i) {
    Expect(r, Wait(r.api, sreq[i], &size, r.deadline), Result::kSuccess, "send " + std::to_string(i));
    Expect(r, Wait(r.api, rreq[i], &size, r.deadline), Result::kSuccess, "recv " + std::to_string(i));
    CHECK_OR_FAIL(r, size == size_of(i), "recv " << i << " size " << size);
    long bad = CheckPattern(in[i], static_cast<size_t>(size_of(i)), r.peer, i);
    CHECK_OR_FAIL(r, bad < 0, "recv " << i << " matched out of order or corrupt at byte " << bad);
  }
}

// Posts one send and one receive that cannot match; both must fail with
// InvalidUsage on both ranks, and the connection must still work after.
void ExpectRejected(Rank& r, int send_size, int send_tag, int recv_size, int recv_tag, const char* what) {
  Reset(r);
  uint8_t* out = Take(r, r.out, static_cast<size_t>(send_size));
  uint8_t* in = Take(r, r.in, static_cast<size_t>(recv_size));
  std::memset(out, 1, static_cast<size_t>(send_size));
  void* sreq = nullptr;
  void* rreq = nullptr;
  Expect(r, PostRecv(r.api, r.recv, in, recv_size, recv_tag, &rreq, r.deadline, r.in.mhandle), Result::kSuccess,
         "irecv");
  Expect(r, PostSend(r.api, r.send, out, send_size, send_tag, &sreq, r.deadline, r.out.mhandle), Result::kSuccess,
         "isend");
  int size = 0;
  Expect(r, Wait(r.api, sreq, &size, r.deadline), Result::kInvalidUsage, std::string(what) + " (send side)");
  Expect(r, Wait(r.api, rreq, &size, r.deadline), Result::kInvalidUsage, std::string(what) + " (receive side)");
}

// Any tag both ends agree on matches, NCCL's or not; different tags never.
void ScenarioTags(Rank& r) {
  for (int tag : {0, 7, 12345, -1}) Exchange(r, {10, 200'000}, 0, Tags{tag, tag}, tag & 0xff);
  ExpectRejected(r, 100, /*send tag*/ 7, 100, /*recv tag*/ 8, "tag mismatch");
  ExpectRejected(r, 300'000, 7, 300'000, 8, "tag mismatch, large");
  Exchange(r, {10, (1 << 20) + 3}, 0, NcclTags(r), 50);  // still in step
}

void ScenarioTruncate(Rank& r) {
  const Tags tags = NcclTags(r);
  ExpectRejected(r, 1000, tags.send, 100, tags.recv, "small send into smaller receive");
  ExpectRejected(r, (1 << 20) + 3, tags.send, 1 << 20, tags.recv, "large send into smaller receive");
  ExpectRejected(r, 1, tags.send, 0, tags.recv, "one byte into an empty receive");
  Exchange(r, {100, (1 << 20) + 3}, 1 << 20, tags, 60);  // still in step; smaller than posted is fine
}

// Without reducers CollNet reports no devices: NCCL then leaves it off
// (never connects, asks reduceSupport or finalizes) and point-to-point
// works as before.
void ScenarioNoCollNet(Rank& r) {
  CHECK_OR_FAIL(r, r.coll_devices == 0, "CollNet reports " << r.coll_devices << " devices with no reducers configured");
  Exchange(r, {0, 1, (1 << 20) + 3}, 0, NcclTags(r), 70);
}

void ScenarioPeerExit(Rank& r) {
  const std::string ready = r.dir + "/ready";
  if (r.rank == 1) {
    // Die without closing anything once rank 0 has its comms, like a crash.
    if (!WaitForFile(r.dir, ready, r.deadline)) Expect(r, Result::kInProgress, Result::kSuccess, "ready file");
    std::_Exit(0);
  }
  WriteFileAtomic(ready, "x", 1);
  Reset(r);
  uint8_t* in = Take(r, r.in, 1 << 20);
  uint8_t* out = Take(r, r.out, 1 << 20);
  void* rreq = nullptr;
  void* sreq = nullptr;
  // The peer may be seen gone when the receive is posted or while it is
  // tested: either way an error, never a hang.
  Result got = PostRecv(r.api, r.recv, in, 1 << 20, r.peer, &rreq, r.deadline, r.in.mhandle);
  int size = 0;
  if (got == Result::kSuccess) got = Wait(r.api, rreq, &size, r.deadline);
  CHECK_OR_FAIL(r, got == Result::kRemoteError || got == Result::kSystemError,
                "receive from a dead peer: result " << static_cast<int>(got));
  Result posted = PostSend(r.api, r.send, out, 1 << 20, r.rank, &sreq, r.deadline, r.out.mhandle);
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
  if (version != 5 && version != 6 && version != 7 && version != 8 && version != 11) {
    std::fprintf(stderr, "table version %s: expected 5, 6, 7, 8 or 11\n", argv[4]);
    return 64;
  }
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
  Setup(r, version);
  std::function<void(Rank&)> run;
  if (scenario == "sizes") {
    run = ScenarioSizes;
  } else if (scenario == "inflight") {
    run = ScenarioInflight;
  } else if (scenario == "tags") {
    run = ScenarioTags;
  } else if (scenario == "truncate") {
    run = ScenarioTruncate;
  } else if (scenario == "nocollnet") {
    run = ScenarioNoCollNet;
  } else if (scenario == "peer_exit") {
    run = ScenarioPeerExit;
  } else {
    Fail(r, "unknown scenario " + scenario);
  }
  OnProgress(r, scenario.c_str(), [&] { run(r); });
  Teardown(r);
  plugin.reset();  // dlclose: must not hang or crash with comms closed
  return 0;
}
