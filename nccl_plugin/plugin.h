// The plugin core's root object: created once per loaded library at NCCL's
// first init call, from the environment registry, and shared by every
// communicator (NCCL 2.28+ calls init per communicator: each gets a
// CommContext, comm_context.h). It holds the immutable configuration, the
// point-to-point devices (one per chosen interface) and the CollNet part,
// implements the device-level entry points (properties, listen, connect) and
// creates each communicator's tuner. Comm-level calls go straight to the comm
// objects. No NCCL types here: the ABI layer (abi/) translates.
//
// Creation never fails: a configuration problem is kept and returned by the
// first call that needs the broken part, so that NCCL's init succeeds and
// point-to-point survives a broken CollNet setting.
//
// Thread-safety: immutable after Create except for the registries of open
// contexts and tuners, which are thread-safe; every method may be called from
// any thread. Connect is driven for one handle by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nccl_plugin/collnet/collnet.h"
#include "nccl_plugin/comm_context.h"
#include "nccl_plugin/config/env_registry.h"
#include "nccl_plugin/config/plugin_config.h"
#include "nccl_plugin/opaque_registry.h"
#include "nccl_plugin/p2p/listen_comm.h"
#include "nccl_plugin/p2p/net_interface.h"
#include "nccl_plugin/p2p/send_comm.h"
#include "nccl_plugin/report/collnet_watch.h"
#include "nccl_plugin/tuner/collnet_tuner.h"

namespace rs::plugin {

struct DeviceProperties {
  int index = 0;  // the device number NCCL uses
  const char* name = nullptr;
  const char* pci_path = nullptr;  // nullptr for a virtual interface
  uint64_t guid = 0;
  int speed_mbps = 0;
  int max_comms = 0;
  int max_recvs = 1;
};

class Plugin {
 public:
  // `interfaces` is the system's interface list (tests pass their own).
  // `nccl_version`: the loading NCCL's version code (report/nccl_version.h),
  // 0 when unknown; it picks the fix the no-tuner warning names.
  static std::unique_ptr<Plugin> Create(const Env& env, const std::vector<InterfaceCandidate>& interfaces,
                                        int nccl_version = 0);
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // A point-to-point configuration problem, or ok.
  const Status& p2p_status() const { return p2p_status_; }
  int num_devices() const { return static_cast<int>(devices_.size()); }
  StatusOr<DeviceProperties> Properties(int dev) const;

  // Writes the handle (at most 128 bytes) and returns the listen comm.
  StatusOr<std::unique_ptr<ListenComm>> Listen(int dev, void* handle) const;
  // One step of connecting with a peer's handle (NCCL's handle buffer, which
  // also keeps the step's state between calls); ok(nullptr) until ready.
  StatusOr<std::unique_ptr<SendComm>> Connect(int dev, void* handle) const;

  const CollNet& collnet() const { return collnet_; }
  // What the user is told on stderr (report/collnet_watch.h); the ABI layer
  // tells it of CollNet connects and point-to-point transfers.
  CollNetWatch& watch() const { return *watch_; }

  // The context of one communicator's init (v11 tables). The plugin owns it:
  // one NCCL never finalizes (it stops calling CollNet after an init whose
  // devices are 0) goes with the library.
  CommContext* OpenContext(CommContext::Kind kind, uint64_t comm_id);
  // `ctx` if it is an open context of `kind`, looked up before it is read.
  StatusOr<CommContext*> FindContext(void* ctx, CommContext::Kind kind) const;
  Status CloseContext(void* ctx, CommContext::Kind kind);

  // The tuner of one communicator, owned here like the contexts. It changes
  // nothing when CollNet is off or there is a single node. Warns (once per
  // process) when NCCL will not use CollNet for it (report/collnet_watch.h),
  // says on stderr where the reducers are used, and watches that
  // all-reduces reach them. An error only under REDUCER_REQUIRED=1, when the
  // reducers will not be used: NCCL then fails the communicator's init.
  StatusOr<CollNetTuner*> CreateTuner(const CommShape& comm);
  StatusOr<const CollNetTuner*> FindTuner(void* ctx) const;
  Status DestroyTuner(void* ctx);

 private:
  Plugin(Status p2p_status, P2pConfig p2p, std::vector<NetInterface> devices, StatusOr<CollNetConfig> collnet);
  Status CheckDevice(int dev) const;

  Status p2p_status_;
  P2pConfig p2p_;
  std::vector<NetInterface> devices_;
  CollNet collnet_;
  std::unique_ptr<CollNetWatch> watch_;  // set by Create
  OpaqueRegistry<CommContext> contexts_;
  OpaqueRegistry<CollNetTuner> tuners_;
};

}  // namespace rs::plugin
