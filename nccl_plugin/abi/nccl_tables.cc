// The tables NCCL looks up in libnccl-net-reducer.so, one per supported
// version, assembled from the slot implementations (slots.h). Which NCCL
// takes which (docs/engineering/nccl-interface.md, "Which tables"):
//
//   ncclNetPlugin_v11, ncclCollNetPlugin_v11   NCCL 2.28 and later
//   ncclNetPlugin_v8                            NCCL 2.20 - 2.27
//   ncclNetPlugin_v7, ncclCollNetPlugin_v7      NCCL 2.19; CollNet for 2.19 - 2.27
//   ncclNetPlugin_v6, ncclCollNetPlugin_v6      NCCL 2.13 - 2.18
//   ncclNetPlugin_v5, ncclCollNetPlugin_v5      NCCL 2.12
//   ncclTunerPlugin_v5                          NCCL 2.28 - 2.30
//   ncclTunerPlugin_v4                          NCCL 2.24 - 2.27
//   ncclTunerPlugin_v3                          NCCL 2.22 - 2.23
//   ncclTunerPlugin_v2                          NCCL 2.21
//   ncclTunerPlugin_v1                          NCCL 2.19 - 2.20 (only through
//                                               NCCL_TUNER_PLUGIN; preload.cc)
//
// CollNet v8 is deliberately not exported: NCCL's v8 adapter wraps
// iallgather/ireducescatter so that they look supported even when NULL,
// while its v7 adapter and the native v11 table leave them NULL, and a NULL
// there keeps all_gather / reduce_scatter off the reducers.
//
// Thread-safety: the tables are constant; see slots.h for the slots.
#include "nccl_plugin/abi/nccl_abi.h"
#include "nccl_plugin/abi/nccl_tuner_abi.h"
#include "nccl_plugin/abi/slots.h"
#include "nccl_plugin/abi/abi_support.h"

// extern "C" gives the const objects external linkage and unmangled names;
// everything else in the library is hidden (visibility flags + exports.map).
namespace abi = rs::plugin::abi;

#define RS_EXPORT extern "C" __attribute__((visibility("default")))

RS_EXPORT const abi::NetV11 ncclNetPlugin_v11 = {
    .name = abi::kPluginName,
    .init = abi::NetInitV11,
    .devices = abi::NetDevices,
    .getProperties = abi::NetGetProperties<abi::PropertiesV11>,
    .listen = abi::NetListenV11,
    .connect = abi::NetConnectV11,
    .accept = abi::NetAccept,
    .regMr = abi::NetRegMr<size_t>,
    .regMrDmaBuf = abi::NetRegMrDmaBuf,
    .deregMr = abi::NetDeregMr,
    .isend = abi::NetIsendV11,
    .irecv = abi::NetIrecvV11,
    .iflush = abi::NetIflush,
    .test = abi::NetTest,
    .closeSend = abi::NetCloseSend,
    .closeRecv = abi::NetCloseRecv,
    .closeListen = abi::NetCloseListen,
    .getDeviceMr = nullptr,    // host plugin: NCCL never asks
    .irecvConsumed = nullptr,  // idem
    .makeVDevice = nullptr,    // no virtual NICs: NCCL uses the physical devices
    .finalize = abi::NetFinalizeV11,
    .setNetAttr = nullptr,     // no hints taken
};

// v8 and v7 differ only in the properties struct and regMr's size type.
template <typename Table, typename Properties, typename Size>
constexpr Table LegacyNetTable() {
  return Table{
      .name = abi::kPluginName,
      .init = abi::NetInit,
      .devices = abi::NetDevices,
      .getProperties = abi::NetGetProperties<Properties>,
      .listen = abi::NetListen,
      .connect = abi::NetConnect,
      .accept = abi::NetAccept,
      .regMr = abi::NetRegMr<Size>,
      .regMrDmaBuf = abi::NetRegMrDmaBuf,
      .deregMr = abi::NetDeregMr,
      .isend = abi::NetIsend,
      .irecv = abi::NetIrecv,
      .iflush = abi::NetIflush,
      .test = abi::NetTest,
      .closeSend = abi::NetCloseSend,
      .closeRecv = abi::NetCloseRecv,
      .closeListen = abi::NetCloseListen,
      .getDeviceMr = nullptr,
      .irecvConsumed = nullptr,
  };
}

RS_EXPORT const abi::NetV8 ncclNetPlugin_v8 = LegacyNetTable<abi::NetV8, abi::PropertiesV8, size_t>();
RS_EXPORT const abi::NetV7 ncclNetPlugin_v7 = LegacyNetTable<abi::NetV7, abi::PropertiesV7, int>();

// v6 and v5 (NCCL 2.12 - 2.18): no device handles, no getDeviceMr /
// irecvConsumed; v5 has no regMrDmaBuf either.
RS_EXPORT const abi::NetV6 ncclNetPlugin_v6 = {
    .name = abi::kPluginName,
    .init = abi::NetInit,
    .devices = abi::NetDevices,
    .getProperties = abi::NetGetProperties<abi::PropertiesV6>,
    .listen = abi::NetListen,
    .connect = abi::NetConnectV6,
    .accept = abi::NetAcceptV6,
    .regMr = abi::NetRegMr<int>,
    .regMrDmaBuf = abi::NetRegMrDmaBuf,
    .deregMr = abi::NetDeregMr,
    .isend = abi::NetIsend,
    .irecv = abi::NetIrecv,
    .iflush = abi::NetIflush,
    .test = abi::NetTest,
    .closeSend = abi::NetCloseSend,
    .closeRecv = abi::NetCloseRecv,
    .closeListen = abi::NetCloseListen,
};

RS_EXPORT const abi::NetV5 ncclNetPlugin_v5 = {
    .name = abi::kPluginName,
    .init = abi::NetInit,
    .devices = abi::NetDevices,
    .getProperties = abi::NetGetProperties<abi::PropertiesV6>,
    .listen = abi::NetListen,
    .connect = abi::NetConnectV6,
    .accept = abi::NetAcceptV6,
    .regMr = abi::NetRegMr<int>,
    .deregMr = abi::NetDeregMr,
    .isend = abi::NetIsend,
    .irecv = abi::NetIrecv,
    .iflush = abi::NetIflush,
    .test = abi::NetTest,
    .closeSend = abi::NetCloseSend,
    .closeRecv = abi::NetCloseRecv,
    .closeListen = abi::NetCloseListen,
};

RS_EXPORT const abi::CollNetV11 ncclCollNetPlugin_v11 = {
    .name = abi::kPluginName,
    .init = abi::CollInitV11,
    .devices = abi::CollDevices,
    .getProperties = abi::CollGetProperties<abi::PropertiesV11>,
    .listen = abi::CollListenV11,
    .connect = abi::CollConnect,
    .reduceSupport = abi::CollReduceSupport,
    .regMr = abi::CollRegMr<size_t>,
    .regMrDmaBuf = abi::CollRegMrDmaBuf,
    .deregMr = abi::CollDeregMr,
    .iallreduce = abi::CollIallreduce<size_t>,
    // Reduce-scatter and all-gather through reducers move no fewer bytes
    // than NCCL's ring: not offered, by design (docs/guide/frameworks.md).
    .iallgather = nullptr,
    .ireducescatter = nullptr,
    .iflush = abi::CollIflush,
    .test = abi::CollTest,
    .closeColl = abi::CollCloseColl,
    .closeListen = abi::CollCloseListen,
    .makeVDevice = nullptr,
    .finalize = abi::CollFinalizeV11,
};

// v7 and v6 differ only in the properties struct.
template <typename Table, typename Properties>
constexpr Table IntCollNetTable() {
  return Table{
      .name = abi::kPluginName,
      .init = abi::CollInit,
      .devices = abi::CollDevices,
      .getProperties = abi::CollGetProperties<Properties>,
      .listen = abi::CollListen,
      .connect = abi::CollConnect,
      .reduceSupport = abi::CollReduceSupport,
      .regMr = abi::CollRegMr<int>,
      .regMrDmaBuf = abi::CollRegMrDmaBuf,
      .deregMr = abi::CollDeregMr,
      .iallreduce = abi::CollIallreduce<int>,
      .iflush = abi::CollIflush,
      .test = abi::CollTest,
      .closeColl = abi::CollCloseColl,
      .closeListen = abi::CollCloseListen,
  };
}

RS_EXPORT const abi::CollNetV7 ncclCollNetPlugin_v7 = IntCollNetTable<abi::CollNetV7, abi::PropertiesV7>();
RS_EXPORT const abi::CollNetV6 ncclCollNetPlugin_v6 = IntCollNetTable<abi::CollNetV6, abi::PropertiesV6>();

RS_EXPORT const abi::CollNetV5 ncclCollNetPlugin_v5 = {
    .name = abi::kPluginName,
    .init = abi::CollInit,
    .devices = abi::CollDevices,
    .getProperties = abi::CollGetProperties<abi::PropertiesV6>,
    .listen = abi::CollListen,
    .connect = abi::CollConnect,
    .reduceSupport = abi::CollReduceSupport,
    .regMr = abi::CollRegMr<int>,
    .deregMr = abi::CollDeregMr,
    .iallreduce = abi::CollIallreduce<int>,
    .iflush = abi::CollIflush,
    .test = abi::CollTest,
    .closeColl = abi::CollCloseColl,
    .closeListen = abi::CollCloseListen,
};

RS_EXPORT const abi::TunerV5 ncclTunerPlugin_v5 = {
    .name = abi::kPluginName,
    .init = abi::TunerInitV5,
    .getCollInfo = abi::TunerGetCollInfo,
    .finalize = abi::TunerFinalize,
};

RS_EXPORT const abi::TunerV4 ncclTunerPlugin_v4 = {
    .name = abi::kPluginName,
    .init = abi::TunerInitV2,
    .getCollInfo = abi::TunerGetCollInfo,
    .destroy = abi::TunerFinalize,
};

RS_EXPORT const abi::TunerV3 ncclTunerPlugin_v3 = {
    .name = abi::kPluginName,
    .init = abi::TunerInitV2,
    .getCollInfo = abi::TunerGetCollInfoV3,
    .destroy = abi::TunerFinalize,
};

RS_EXPORT const abi::TunerV2 ncclTunerPlugin_v2 = {
    .name = abi::kPluginName,
    .init = abi::TunerInitV2,
    .getCollInfo = abi::TunerGetCollInfoV2,
    .destroy = abi::TunerFinalize,
};

RS_EXPORT const abi::TunerV1 ncclTunerPlugin_v1 = {
    .name = abi::kPluginName,
    .init = abi::TunerInitV1,
    .getCollInfo = abi::TunerGetCollInfoV1,
    .destroy = abi::TunerDestroyV1,
};
