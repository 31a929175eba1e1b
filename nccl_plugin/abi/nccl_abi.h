// Our own declarations of the NCCL network-plugin ABI: the point-to-point
// (`ncclNet`) and collective (`ncclCollNet`) tables of versions 5, 6, 7, 8
// and 11,
// the properties structs, the device handle, the scatter-gather entries, the
// logger and the result codes. NCCL ships no plugin headers with its
// packages, so these are written from the facts in docs/engineering/nccl-interface.md (read
// from NCCL's sources); every size and offset is pinned by a static_assert
// below, so a wrong declaration fails the build instead of corrupting NCCL's
// memory. NCCL's limits are declared here too and tied to the core's own
// (nccl_plugin/nccl_limits.h).
//
// Only the ABI layer (abi/*.cc) and the ABI tests include this file; the
// plugin core never sees NCCL types. Also here: the pure mappings from our
// Status codes and NCCL enums, so the tests can check them directly.
//
// Thread-safety: declarations and constexpr functions only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/dtype.h"
#include "common/status.h"
#include "nccl_plugin/nccl_limits.h"

namespace rs::plugin::abi {

// ---- constants ------------------------------------------------------------

inline constexpr size_t kHandleMaxBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
inline constexpr int kMaxRequestsPerComm = 32;  // NCCL_NET_MAX_REQUESTS since 2.19
inline constexpr int kMaxRequestsPerCommV6 = 8;  // NCCL_NET_MAX_REQUESTS in 2.12 - 2.18
inline constexpr size_t kMaxNetSizeBytes = size_t{1} << 40;  // NCCL_MAX_NET_SIZE_BYTES (v11)
inline constexpr int kMaxDevsPerNic = 4;        // NCCL_NET_MAX_DEVS_PER_NIC (v11 virtual devices)
// irecv's *request on entry may hold this hint (v11): the receive need not be
// reported complete. We ignore it and always report.
inline constexpr uintptr_t kOptionalRecvCompletion = 0x1;

// The core's limits are NCCL's.
static_assert(kHandleBytes == kHandleMaxBytes, "nccl_limits.h: handle size");
static_assert(kP2pRequestsPerComm == kMaxRequestsPerComm, "nccl_limits.h: requests in flight per comm");
// NCCL 2.12 - 2.18 keep fewer in flight; the same pool serves them.
static_assert(kP2pRequestsPerComm >= kMaxRequestsPerCommV6, "nccl_limits.h: requests in flight per comm (v5/v6)");
static_assert(kNcclMaxNetBytes == kMaxNetSizeBytes, "nccl_limits.h: largest transfer NCCL accepts");

inline constexpr int kPtrHost = 0x1;
inline constexpr int kPtrCuda = 0x2;
inline constexpr int kPtrDmaBuf = 0x4;

// Enum-typed values cross the ABI as 4-byte ints.
enum class Result : int32_t {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};
static_assert(sizeof(Result) == 4);

enum NcclLogLevel : int { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3, kLogAbort = 4, kLogTrace = 5 };
inline constexpr unsigned long kLogFlagInit = 0x1;
inline constexpr unsigned long kLogFlagNet = 0x10;
inline constexpr unsigned long kLogFlagTuning = 0x40;
inline constexpr unsigned long kLogFlagAll = ~0UL;

// NCCL's data-type and reduction-op numbering.
inline constexpr int kNcclInt8 = 0, kNcclUint8 = 1, kNcclInt32 = 2, kNcclUint32 = 3, kNcclInt64 = 4,
                     kNcclUint64 = 5, kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclFloat64 = 8,
                     kNcclBfloat16 = 9, kNcclFloat8e4m3 = 10, kNcclFloat8e5m2 = 11;
inline constexpr int kNcclSum = 0, kNcclProd = 1, kNcclMax = 2, kNcclMin = 3, kNcclAvg = 4;

inline constexpr int kNetDeviceHost = 0;  // netDeviceType of a host-only plugin

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt,
                        ...);
// The profiler callback v11's net init receives; unused by us.
using ProfilerCallback = Result (*)(void** event, int type, void* parent, int64_t plugin_id, void* ext_data);

// ---- structs --------------------------------------------------------------

struct DeviceHandle {  // ncclNetDeviceHandle_v7_t / _v8_t (identical)
  int type;
  int version;
  void* handle;
  size_t size;
  int needsProxyProgress;
};

struct PropertiesV8 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;  // Mbps
  int port;
  float latency;  // microseconds
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
};

struct PropertiesV7 {  // v8 without regIsGlobal
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
};

// ncclNetProperties_v6_t; v5's (NCCL 2.12) has the same fields in the same
// order. v7 without the device type and version: NCCL 2.12 - 2.18 know no
// device-side networking.
struct PropertiesV6 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int speed;  // Mbps
  int port;
  float latency;  // microseconds
  int maxComms;
  int maxRecvs;
};

// ---- point-to-point tables -------------------------------------------------
// v7 and v8 differ only in the properties type and regMr's size parameter.

template <typename Props, typename RegSize>
struct NetTable {
  const char* name;
  Result (*init)(Logger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, Props* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  Result (*regMr)(void* comm, void* data, RegSize size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                        void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                  void** request);
  Result (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  Result (*getDeviceMr)(void* comm, void* mhandle, void** dptr);
  Result (*irecvConsumed)(void* recvComm, int n, void* request);
};
using NetV8 = NetTable<PropertiesV8, size_t>;
using NetV7 = NetTable<PropertiesV7, int>;

// ---- versions 6 and 5 (NCCL 2.12 - 2.18) -----------------------------------
// v7 without the device handles on connect/accept and without the last two
// slots (getDeviceMr, irecvConsumed). v5 also lacks regMrDmaBuf, so every
// slot after regMr sits one position earlier.

struct NetV6 {
  const char* name;
  Result (*init)(Logger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV6* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(int dev, void* handle, void** sendComm);
  Result (*accept)(void* listenComm, void** recvComm);
  Result (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                        void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                  void** request);
  Result (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
};

struct NetV5 {
  const char* name;
  Result (*init)(Logger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV6* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(int dev, void* handle, void** sendComm);
  Result (*accept)(void* listenComm, void** recvComm);
  Result (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                  void** request);
  Result (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
};

// ---- collective tables -----------------------------------------------------

// v7: the newest CollNet table without iallgather/ireducescatter slots, so
// NCCL's adapter (2.19 to 2.29) leaves them NULL; v8's adapter wraps them and
// makes a plugin look able to all-gather and reduce-scatter. v6 (NCCL 2.13 -
// 2.18) has the same slots with the v6 properties.
template <typename Props>
struct CollNetIntTable {  // int size in regMr, int count in iallreduce
  const char* name;
  Result (*init)(Logger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, Props* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(void* handles[], int nranks, int rank, void* listenComm, void** collComm);
  Result (*reduceSupport)(int dataType, int redOp, int* supported);
  Result (*regMr)(void* collComm, void* data, int size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset, int fd,
                        void** mhandle);
  Result (*deregMr)(void* collComm, void* mhandle);
  Result (*iallreduce)(void* collComm, void* sendData, void* recvData, int count, int dataType,
                       int redOp, void* sendMhandle, void* recvMhandle, void** request);
  Result (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  Result (*test)(void* request, int* done, int* size);
  Result (*closeColl)(void* collComm);
  Result (*closeListen)(void* listenComm);
};
using CollNetV7 = CollNetIntTable<PropertiesV7>;
using CollNetV6 = CollNetIntTable<PropertiesV6>;

// v5 (NCCL 2.12; 2.13 - 2.18 still accept it): v6 without regMrDmaBuf.
struct CollNetV5 {
  const char* name;
  Result (*init)(Logger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV6* props);
  Result (*listen)(int dev, void* handle, void** listenComm);
  Result (*connect)(void* handles[], int nranks, int rank, void* listenComm, void** collComm);
  Result (*reduceSupport)(int dataType, int redOp, int* supported);
  Result (*regMr)(void* collComm, void* data, int size, int type, void** mhandle);
  Result (*deregMr)(void* collComm, void* mhandle);
  Result (*iallreduce)(void* collComm, void* sendData, void* recvData, int count, int dataType,
                       int redOp, void* sendMhandle, void* recvMhandle, void** request);
  Result (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  Result (*test)(void* request, int* done, int* size);
  Result (*closeColl)(void* collComm);
  Result (*closeListen)(void* listenComm);
};

// ---- version 11 (NCCL 2.28+) ------------------------------------------------
// Per-communicator init/finalize with a context, size_t sizes and counts,
// virtual devices, transfer limits in the properties.

struct VDevicePropsV11 {  // ncclNetVDeviceProps_v11_t
  int ndevs;
  int devs[kMaxDevsPerNic];
};

struct PropertiesV11 {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;  // Mbps
  int port;
  float latency;  // microseconds
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
  VDevicePropsV11 vProps;
  size_t maxP2pBytes;   // in (0, kMaxNetSizeBytes], or NCCL refuses the device
  size_t maxCollBytes;  // idem
  int maxMultiRequestSize;
};

struct CommConfigV11 {  // ncclNetCommConfig_v11_t
  int trafficClass;     // -1: undefined
};

struct NetAttrV11;  // ncclNetAttr_v11_t: only behind setNetAttr, which we leave NULL

struct SgeV11 {  // ncclNetSGE_v11_t: size_t size where v8 has uint32_t
  void* mhandle;
  void* address;
  size_t size;
};

struct NetV11 {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, CommConfigV11* config, Logger logger, ProfilerCallback profiler);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV11* props);
  Result (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  Result (*connect)(void* ctx, int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm);
  Result (*accept)(void* listenComm, void** recvComm, DeviceHandle** recvDevComm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                        void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                  void** request);
  Result (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                  void** phandles, void** request);
  Result (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* sendComm);
  Result (*closeRecv)(void* recvComm);
  Result (*closeListen)(void* listenComm);
  Result (*getDeviceMr)(void* comm, void* mhandle, void** dptr);
  Result (*irecvConsumed)(void* recvComm, int n, void* request);
  Result (*makeVDevice)(int* d, VDevicePropsV11* props);  // NULL: NCCL uses the physical devices
  Result (*finalize)(void* ctx);
  Result (*setNetAttr)(void* ctx, NetAttrV11* attr);  // may be NULL
};

struct CollNetV11 {
  const char* name;
  Result (*init)(void** ctx, uint64_t commId, Logger logger);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV11* props);
  Result (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  Result (*connect)(void* handles[], int nranks, int rank, void* listenComm, void** collComm);
  Result (*reduceSupport)(int dataType, int redOp, int* supported);
  Result (*regMr)(void* collComm, void* data, size_t size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset, int fd,
                        void** mhandle);
  Result (*deregMr)(void* collComm, void* mhandle);
  Result (*iallreduce)(void* collComm, void* sendData, void* recvData, size_t count, int dataType,
                       int redOp, void* sendMhandle, void* recvMhandle, void** request);
  // NULL in our table: NCCL then never routes all_gather / reduce_scatter to
  // CollNet (graph/tuning.cc honours NULL here for native v11 tables).
  Result (*iallgather)(void* collComm, void* sendData, int nRecvParts, SgeV11* recvParts,
                       size_t bytesPerRank, size_t windowOffset, size_t windowBytes,
                       void* sendMhandle, void** request);
  Result (*ireducescatter)(void* collComm, int nSendParts, SgeV11* sendParts, void* recvData,
                           size_t bytesPerRank, size_t windowOffset, size_t windowBytes,
                           int dataType, int redOp, void* recvMhandle, void** request);
  Result (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  Result (*test)(void* request, int* done, int* size);
  Result (*closeColl)(void* collComm);
  Result (*closeListen)(void* listenComm);
  Result (*makeVDevice)(int* d, VDevicePropsV11* props);
  Result (*finalize)(void* ctx);
};

// ---- layout checks (docs/engineering/nccl-interface.md, "Layouts") ----

static_assert(sizeof(DeviceHandle) == 32);
static_assert(offsetof(DeviceHandle, type) == 0 && offsetof(DeviceHandle, version) == 4 &&
              offsetof(DeviceHandle, handle) == 8 && offsetof(DeviceHandle, size) == 16 &&
              offsetof(DeviceHandle, needsProxyProgress) == 24);

static_assert(sizeof(PropertiesV8) == 64);
static_assert(offsetof(PropertiesV8, name) == 0 && offsetof(PropertiesV8, pciPath) == 8 &&
              offsetof(PropertiesV8, guid) == 16 && offsetof(PropertiesV8, ptrSupport) == 24 &&
              offsetof(PropertiesV8, regIsGlobal) == 28 && offsetof(PropertiesV8, speed) == 32 &&
              offsetof(PropertiesV8, port) == 36 && offsetof(PropertiesV8, latency) == 40 &&
              offsetof(PropertiesV8, maxComms) == 44 && offsetof(PropertiesV8, maxRecvs) == 48 &&
              offsetof(PropertiesV8, netDeviceType) == 52 &&
              offsetof(PropertiesV8, netDeviceVersion) == 56);

static_assert(sizeof(PropertiesV7) == 56);
static_assert(offsetof(PropertiesV7, name) == 0 && offsetof(PropertiesV7, pciPath) == 8 &&
              offsetof(PropertiesV7, guid) == 16 && offsetof(PropertiesV7, ptrSupport) == 24 &&
              offsetof(PropertiesV7, speed) == 28 && offsetof(PropertiesV7, port) == 32 &&
              offsetof(PropertiesV7, latency) == 36 && offsetof(PropertiesV7, maxComms) == 40 &&
              offsetof(PropertiesV7, maxRecvs) == 44 && offsetof(PropertiesV7, netDeviceType) == 48 &&
              offsetof(PropertiesV7, netDeviceVersion) == 52);

// Slot i of every table sits at byte 8 * i.
#define RS_ABI_SLOT(T, field, i) static_assert(offsetof(T, field) == 8 * (i), #T "." #field)

static_assert(sizeof(NetV8) == 152 && sizeof(NetV7) == 152);
#define RS_ABI_NET_SLOTS(T)                                                                   \
  RS_ABI_SLOT(T, name, 0); RS_ABI_SLOT(T, init, 1); RS_ABI_SLOT(T, devices, 2);               \
  RS_ABI_SLOT(T, getProperties, 3); RS_ABI_SLOT(T, listen, 4); RS_ABI_SLOT(T, connect, 5);    \
  RS_ABI_SLOT(T, accept, 6); RS_ABI_SLOT(T, regMr, 7); RS_ABI_SLOT(T, regMrDmaBuf, 8);        \
  RS_ABI_SLOT(T, deregMr, 9); RS_ABI_SLOT(T, isend, 10); RS_ABI_SLOT(T, irecv, 11);           \
  RS_ABI_SLOT(T, iflush, 12); RS_ABI_SLOT(T, test, 13); RS_ABI_SLOT(T, closeSend, 14);        \
  RS_ABI_SLOT(T, closeRecv, 15); RS_ABI_SLOT(T, closeListen, 16);                             \
  RS_ABI_SLOT(T, getDeviceMr, 17); RS_ABI_SLOT(T, irecvConsumed, 18)
RS_ABI_NET_SLOTS(NetV8);
RS_ABI_NET_SLOTS(NetV7);
#undef RS_ABI_NET_SLOTS

static_assert(sizeof(CollNetV7) == 120 && sizeof(CollNetV6) == 120);  // 15 slots
#define RS_ABI_COLLNET_INT_SLOTS(T)                                                         \
  RS_ABI_SLOT(T, name, 0); RS_ABI_SLOT(T, init, 1); RS_ABI_SLOT(T, devices, 2);             \
  RS_ABI_SLOT(T, getProperties, 3); RS_ABI_SLOT(T, listen, 4); RS_ABI_SLOT(T, connect, 5);  \
  RS_ABI_SLOT(T, reduceSupport, 6); RS_ABI_SLOT(T, regMr, 7); RS_ABI_SLOT(T, regMrDmaBuf, 8); \
  RS_ABI_SLOT(T, deregMr, 9); RS_ABI_SLOT(T, iallreduce, 10); RS_ABI_SLOT(T, iflush, 11);  \
  RS_ABI_SLOT(T, test, 12); RS_ABI_SLOT(T, closeColl, 13); RS_ABI_SLOT(T, closeListen, 14)
RS_ABI_COLLNET_INT_SLOTS(CollNetV7);
RS_ABI_COLLNET_INT_SLOTS(CollNetV6);
#undef RS_ABI_COLLNET_INT_SLOTS

// ncclNetProperties_v6_t (and v5's), NCCL 2.12 - 2.18.
static_assert(sizeof(PropertiesV6) == 48);
static_assert(offsetof(PropertiesV6, name) == 0 && offsetof(PropertiesV6, pciPath) == 8 &&
              offsetof(PropertiesV6, guid) == 16 && offsetof(PropertiesV6, ptrSupport) == 24 &&
              offsetof(PropertiesV6, speed) == 28 && offsetof(PropertiesV6, port) == 32 &&
              offsetof(PropertiesV6, latency) == 36 && offsetof(PropertiesV6, maxComms) == 40 &&
              offsetof(PropertiesV6, maxRecvs) == 44);

static_assert(sizeof(NetV6) == 136);  // 17 slots
RS_ABI_SLOT(NetV6, name, 0); RS_ABI_SLOT(NetV6, init, 1); RS_ABI_SLOT(NetV6, devices, 2);
RS_ABI_SLOT(NetV6, getProperties, 3); RS_ABI_SLOT(NetV6, listen, 4); RS_ABI_SLOT(NetV6, connect, 5);
RS_ABI_SLOT(NetV6, accept, 6); RS_ABI_SLOT(NetV6, regMr, 7); RS_ABI_SLOT(NetV6, regMrDmaBuf, 8);
RS_ABI_SLOT(NetV6, deregMr, 9); RS_ABI_SLOT(NetV6, isend, 10); RS_ABI_SLOT(NetV6, irecv, 11);
RS_ABI_SLOT(NetV6, iflush, 12); RS_ABI_SLOT(NetV6, test, 13); RS_ABI_SLOT(NetV6, closeSend, 14);
RS_ABI_SLOT(NetV6, closeRecv, 15); RS_ABI_SLOT(NetV6, closeListen, 16);

static_assert(sizeof(NetV5) == 128);  // 16 slots: no regMrDmaBuf
RS_ABI_SLOT(NetV5, name, 0); RS_ABI_SLOT(NetV5, init, 1); RS_ABI_SLOT(NetV5, devices, 2);
RS_ABI_SLOT(NetV5, getProperties, 3); RS_ABI_SLOT(NetV5, listen, 4); RS_ABI_SLOT(NetV5, connect, 5);
RS_ABI_SLOT(NetV5, accept, 6); RS_ABI_SLOT(NetV5, regMr, 7); RS_ABI_SLOT(NetV5, deregMr, 8);
RS_ABI_SLOT(NetV5, isend, 9); RS_ABI_SLOT(NetV5, irecv, 10); RS_ABI_SLOT(NetV5, iflush, 11);
RS_ABI_SLOT(NetV5, test, 12); RS_ABI_SLOT(NetV5, closeSend, 13); RS_ABI_SLOT(NetV5, closeRecv, 14);
RS_ABI_SLOT(NetV5, closeListen, 15);

static_assert(sizeof(CollNetV5) == 112);  // 14 slots: no regMrDmaBuf
RS_ABI_SLOT(CollNetV5, name, 0); RS_ABI_SLOT(CollNetV5, init, 1); RS_ABI_SLOT(CollNetV5, devices, 2);
RS_ABI_SLOT(CollNetV5, getProperties, 3); RS_ABI_SLOT(CollNetV5, listen, 4);
RS_ABI_SLOT(CollNetV5, connect, 5); RS_ABI_SLOT(CollNetV5, reduceSupport, 6);
RS_ABI_SLOT(CollNetV5, regMr, 7); RS_ABI_SLOT(CollNetV5, deregMr, 8);
RS_ABI_SLOT(CollNetV5, iallreduce, 9); RS_ABI_SLOT(CollNetV5, iflush, 10);
RS_ABI_SLOT(CollNetV5, test, 11); RS_ABI_SLOT(CollNetV5, closeColl, 12);
RS_ABI_SLOT(CollNetV5, closeListen, 13);

static_assert(sizeof(VDevicePropsV11) == 20);
static_assert(sizeof(PropertiesV11) == 112);
static_assert(offsetof(PropertiesV11, name) == 0 && offsetof(PropertiesV11, pciPath) == 8 &&
              offsetof(PropertiesV11, guid) == 16 && offsetof(PropertiesV11, ptrSupport) == 24 &&
              offsetof(PropertiesV11, regIsGlobal) == 28 && offsetof(PropertiesV11, forceFlush) == 32 &&
              offsetof(PropertiesV11, speed) == 36 && offsetof(PropertiesV11, port) == 40 &&
              offsetof(PropertiesV11, latency) == 44 && offsetof(PropertiesV11, maxComms) == 48 &&
              offsetof(PropertiesV11, maxRecvs) == 52 && offsetof(PropertiesV11, netDeviceType) == 56 &&
              offsetof(PropertiesV11, netDeviceVersion) == 60 && offsetof(PropertiesV11, vProps) == 64 &&
              offsetof(PropertiesV11, maxP2pBytes) == 88 && offsetof(PropertiesV11, maxCollBytes) == 96 &&
              offsetof(PropertiesV11, maxMultiRequestSize) == 104);
static_assert(sizeof(CommConfigV11) == 4);
static_assert(sizeof(SgeV11) == 24 && offsetof(SgeV11, size) == 16);

static_assert(sizeof(NetV11) == 176);  // 22 slots
RS_ABI_SLOT(NetV11, name, 0); RS_ABI_SLOT(NetV11, init, 1); RS_ABI_SLOT(NetV11, devices, 2);
RS_ABI_SLOT(NetV11, getProperties, 3); RS_ABI_SLOT(NetV11, listen, 4); RS_ABI_SLOT(NetV11, connect, 5);
RS_ABI_SLOT(NetV11, accept, 6); RS_ABI_SLOT(NetV11, regMr, 7); RS_ABI_SLOT(NetV11, regMrDmaBuf, 8);
RS_ABI_SLOT(NetV11, deregMr, 9); RS_ABI_SLOT(NetV11, isend, 10); RS_ABI_SLOT(NetV11, irecv, 11);
RS_ABI_SLOT(NetV11, iflush, 12); RS_ABI_SLOT(NetV11, test, 13); RS_ABI_SLOT(NetV11, closeSend, 14);
RS_ABI_SLOT(NetV11, closeRecv, 15); RS_ABI_SLOT(NetV11, closeListen, 16);
RS_ABI_SLOT(NetV11, getDeviceMr, 17); RS_ABI_SLOT(NetV11, irecvConsumed, 18);
RS_ABI_SLOT(NetV11, makeVDevice, 19); RS_ABI_SLOT(NetV11, finalize, 20); RS_ABI_SLOT(NetV11, setNetAttr, 21);

static_assert(sizeof(CollNetV11) == 152);  // 19 slots
RS_ABI_SLOT(CollNetV11, name, 0); RS_ABI_SLOT(CollNetV11, init, 1); RS_ABI_SLOT(CollNetV11, devices, 2);
RS_ABI_SLOT(CollNetV11, getProperties, 3); RS_ABI_SLOT(CollNetV11, listen, 4);
RS_ABI_SLOT(CollNetV11, connect, 5); RS_ABI_SLOT(CollNetV11, reduceSupport, 6);
RS_ABI_SLOT(CollNetV11, regMr, 7); RS_ABI_SLOT(CollNetV11, regMrDmaBuf, 8);
RS_ABI_SLOT(CollNetV11, deregMr, 9); RS_ABI_SLOT(CollNetV11, iallreduce, 10);
RS_ABI_SLOT(CollNetV11, iallgather, 11); RS_ABI_SLOT(CollNetV11, ireducescatter, 12);
RS_ABI_SLOT(CollNetV11, iflush, 13); RS_ABI_SLOT(CollNetV11, test, 14);
RS_ABI_SLOT(CollNetV11, closeColl, 15); RS_ABI_SLOT(CollNetV11, closeListen, 16);
RS_ABI_SLOT(CollNetV11, makeVDevice, 17); RS_ABI_SLOT(CollNetV11, finalize, 18);
#undef RS_ABI_SLOT

// ---- mappings ---------------------------------------------------------------

// Status code -> NCCL result. Peer and network failures are Remote/System
// errors, misconfiguration is InvalidUsage, a bad argument InvalidArgument,
// and anything that means "the plugin was used wrongly or has a bug" is
// InternalError.
constexpr Result ResultFromCode(Code code) {
  switch (code) {
    case Code::kOk: return Result::kSuccess;
    case Code::kInvalidArgument: return Result::kInvalidArgument;
    case Code::kProtocol: return Result::kRemoteError;       // a peer sent garbage
    case Code::kVersion: return Result::kInvalidUsage;       // mixed deployments
    case Code::kAuth: return Result::kInvalidUsage;          // wrong job token
    case Code::kMismatch: return Result::kInvalidUsage;      // ranks disagree (e.g. truncation)
    case Code::kTimeout: return Result::kRemoteError;        // a peer stopped answering
    case Code::kPeerFailed: return Result::kRemoteError;
    case Code::kIo: return Result::kSystemError;
    case Code::kResourceExhausted: return Result::kSystemError;
    case Code::kCancelled: return Result::kInternalError;    // closed while in use
    case Code::kInternal: return Result::kInternalError;
  }
  return Result::kInternalError;
}

// The one mapping the ABI wrapper applies: a problem with the plugin's
// configuration (environment variables) is InvalidUsage whatever its code.
constexpr Result ResultFor(Code code, bool misconfiguration) {
  if (code != Code::kOk && misconfiguration) return Result::kInvalidUsage;
  return ResultFromCode(code);
}

// NCCL data type -> ours; nullopt for types the reducers do not handle
// (float8 today, and anything newer).
constexpr std::optional<DataType> DataTypeFromNccl(int nccl_type) {
  switch (nccl_type) {
    case kNcclInt8: return DataType::kInt8;
    case kNcclUint8: return DataType::kUint8;
    case kNcclInt32: return DataType::kInt32;
    case kNcclUint32: return DataType::kUint32;
    case kNcclInt64: return DataType::kInt64;
    case kNcclUint64: return DataType::kUint64;
    case kNcclFloat16: return DataType::kFloat16;
    case kNcclFloat32: return DataType::kFloat32;
    case kNcclFloat64: return DataType::kFloat64;
    case kNcclBfloat16: return DataType::kBfloat16;
    default: return std::nullopt;
  }
}

// NCCL hands Avg and PreMulSum to CollNet as Sum, so only 0-3 arrive here.
constexpr std::optional<ReduceOp> ReduceOpFromNccl(int nccl_op) {
  switch (nccl_op) {
    case kNcclSum: return ReduceOp::kSum;
    case kNcclProd: return ReduceOp::kProd;
    case kNcclMax: return ReduceOp::kMax;
    case kNcclMin: return ReduceOp::kMin;
    default: return std::nullopt;
  }
}

}  // namespace rs::plugin::abi
