// One node's head rank in the CollNet tests (nccl_collnet_rank), as NCCL
// 2.28.9 creates and destroys a CollNet communicator on it
// (plugin/net.cc, transport.cc, transport/coll_net.cc, proxy.cc, init.cc):
//
//   main thread    net init (+ devices, first communicator only), CollNet
//                  init (+ devices, first only), getProperties
//   proxy thread   getProperties, listen                  (recv setup, ch 0)
//   main thread    handle all-gather (files in a shared directory)
//   proxy thread   connect, closeListen, regMr receive    (recv connect, ch 0)
//   proxy thread   getProperties, regMr send               (send side, ch 0)
//                  ... regMr receive and send for every further channel
//   main thread    reduceSupport for every type and op 0-3, all-gathered:
//                  a pair is used only if no node says no
//   progress       iallreduce and test (the scenarios)
//   destroy        progress thread stopped; proxy thread: deregMr of every
//                  registration, closeColl after the last; proxy thread
//                  joined; main thread: net finalize, then CollNet finalize
//
// Failures end the process: exit 1 with the reason on stderr, 2 on a
// deadline.
//
// Thread-safety: a Node belongs to the main thread; the functions that take
// it hand the steps to its proxy threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/nccl_plugin/nccl_proxy_threads.h"
#include "tests/nccl_plugin/plugin_harness.h"

namespace rs::plugin::test {

inline constexpr int kChannels = 2;                    // NCCL registers the buffer 2 x nChannels times
inline constexpr size_t kRegionBytes = 16 << 20;       // the send half; the receive half follows
inline constexpr int kNumOps = 4;                      // ops NCCL asks about (Sum, Prod, Max, Min)
inline constexpr int kNumTypes = abi::kNcclFloat8e5m2 + 1;  // data types of NCCL 2.24+

[[noreturn]] void Die(int code, const std::string& what);
void Check(Result got, const char* what);

struct Node {
  const LoadedPlugin* plugin = nullptr;
  NetApi net;
  CollApi coll;
  std::string dir;
  int node = 0;
  std::vector<int> order;  // node index of each handle, in connect's order
  int version = 11;
  int round = 0;           // communicators created so far in this process
  bool first_comm = true;  // of the loaded library: NCCL asks for devices only then
  Deadline deadline;
  // One communicator's state, from OpenCommunicator to CloseCommunicator.
  std::unique_ptr<ProxyThreads> threads;
  void* comm = nullptr;
  std::vector<uint8_t> staging;         // NCCL's shared CollNet buffer: send half, receive half
  std::vector<void*> send_mh, recv_mh;  // per channel
  bool agreed[kNumOps][kNumTypes] = {};  // NCCL's collNetSupportMatrix
};

// Runs `step` on the proxy service / progress thread; a step that does not
// return by the deadline ends the process (exit 2, naming `what`).
void OnProxy(Node& n, const char* what, const std::function<void()>& step);
void OnProgress(Node& n, const char* what, const std::function<void()>& step);

// Creates the communicator up to the point where NCCL starts collectives;
// returns connect's result. After a failed connect nothing is registered
// and reduceSupport is never asked (NCCL goes on without CollNet).
Result OpenCommunicator(Node& n);
// Destroys it as NCCL's ncclCommDestroy does (see above).
void CloseCommunicator(Node& n);

// The op NCCL hands CollNet for a user's op: Avg and PreMulSum become Sum
// (the division or scaling happens on the GPU; enqueue.cc getCollNetSupport).
int NetOp(int op);
// Whether NCCL would send this all-reduce through CollNet at all.
bool UsesCollNet(const Node& n, int dtype, int op);

}  // namespace rs::plugin::test
