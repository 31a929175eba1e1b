// The ABI layer: the four exported tables NCCL looks up (ncclNetPlugin_v8/v7,
// ncclCollNetPlugin_v8/v7), thin per-version adapters (int vs size_t sizes,
// v7 vs v8 properties) over one implementation per slot, and the one wrapper
// (Guard) through which every call passes: it catches every exception, logs
// a failure once through NCCL's logger and maps the Status to a result code.
// This is the only file that sees NCCL's types (nccl_abi.h).
//
// Thread-safety: init is serialised by a mutex and idempotent (NCCL calls it
// for both tables, and again per communicator in newer releases); the other
// slots are safe from any thread once init has returned, as the core objects
// they reach are. The tables are constant.
#include <atomic>
#include <climits>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>

#include "nccl_plugin/log.h"
#include "nccl_plugin/abi/nccl_abi.h"
#include "nccl_plugin/plugin.h"
#include "nccl_plugin/p2p/recv_comm.h"

namespace rs::plugin::abi {
namespace {

constexpr const char* kPluginName = "Reducer";

// ---- library state (one per load; destroyed at dlclose) ----------------------

std::mutex g_init_mu;
std::unique_ptr<Plugin> g_plugin;           // guarded by g_init_mu; set once
std::atomic<Plugin*> g_plugin_ptr{nullptr};  // lock-free reads after init
std::atomic<Logger> g_logger{nullptr};

void NcclLogSink(LogLevel level, const char* func, int line, const char* message) {
  Logger logger = g_logger.load(std::memory_order_acquire);
  if (logger == nullptr) return;
  // NCCL shows INFO only for the subsystems in NCCL_DEBUG_SUBSYS (INIT by
  // default); our INFO lines are all setup-time, so they carry INIT too.
  unsigned long flags = level == LogLevel::kInfo ? (kLogFlagInit | kLogFlagNet) : kLogFlagNet;
  logger(static_cast<int>(level), flags, func, line, "NET/Reducer : %s", message);
}

StatusOr<Plugin*> Instance() {
  Plugin* plugin = g_plugin_ptr.load(std::memory_order_acquire);
  if (plugin == nullptr) return Status(Code::kInternal, "called before init()");
  return plugin;
}

// ---- the one wrapper -----------------------------------------------------------

// What an adapter hands back: a Status, flagged when it stems from the
// plugin's configuration rather than from the call.
struct Outcome {
  Outcome(Status s) : status(std::move(s)) {}  // NOLINT: implicit by design
  static Outcome Misconfigured(Status s) {
    Outcome out(std::move(s));
    out.misconfiguration = true;
    return out;
  }
  Status status;
  bool misconfiguration = false;
};

template <typename Fn>
Result Guard(const char* what, Fn&& fn) noexcept {
  try {
    Outcome out = fn();
    if (out.status.ok()) return Result::kSuccess;
    RS_PLOG_WARN("%s failed: %s", what, out.status.ToString().c_str());
    return ResultFor(out.status.code(), out.misconfiguration);
  } catch (const std::bad_alloc&) {
    RS_PLOG_WARN("%s failed: out of memory", what);
    return Result::kSystemError;
  } catch (const std::exception& e) {
    RS_PLOG_WARN("%s failed: unexpected exception: %s", what, e.what());
    return Result::kInternalError;
  } catch (...) {
    RS_PLOG_WARN("%s failed: unexpected exception", what);
    return Result::kInternalError;
  }
}

#define RS_ASSIGN_OR_RETURN(lhs, expr) \
  auto lhs##_or = (expr);              \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = std::move(lhs##_or).value()

Status NonNull(const void* p, const char* what) {
  if (p == nullptr) return Status(Code::kInvalidArgument, std::string(what) + " is NULL");
  return Status::Ok();
}

template <typename Size>
Status SizeFromAbi(Size size, size_t* out) {
  if constexpr (std::is_signed_v<Size>) {
    if (size < 0) return Status(Code::kInvalidArgument, "negative size " + std::to_string(size));
  }
  *out = static_cast<size_t>(size);
  return Status::Ok();
}

// Host memory needs no registration; NCCL only needs a non-NULL handle.
char g_host_registration;

// ---- shared by both tables ------------------------------------------------------

Result Init(Logger logger) {
  return Guard("init", [&]() -> Outcome {
    std::lock_guard<std::mutex> lock(g_init_mu);
    if (logger != nullptr) g_logger.store(logger, std::memory_order_release);
    SetLogSink(&NcclLogSink);
    if (g_plugin == nullptr) {
      // Never fails: configuration problems surface from the calls they affect.
      g_plugin = Plugin::Create(Env::Process(), ListSystemInterfaces());
      g_plugin_ptr.store(g_plugin.get(), std::memory_order_release);
    }
    return Status::Ok();
  });
}

template <typename Props>
void FillProperties(const DeviceProperties& p, Props* out) {
  *out = Props{};
  out->name = const_cast<char*>(p.name);
  out->pciPath = const_cast<char*>(p.pci_path);
  out->guid = p.guid;
  out->ptrSupport = kPtrHost;
  if constexpr (requires { out->regIsGlobal; }) out->regIsGlobal = 0;
  out->speed = p.speed_mbps;
  out->port = 0;
  out->latency = 0;
  out->maxComms = p.max_comms;
  out->maxRecvs = p.max_recvs;
  out->netDeviceType = kNetDeviceHost;
  out->netDeviceVersion = 0;
}

Status RequireHost(int type) {
  if (type != kPtrHost) {
    return Status(Code::kInvalidArgument, "memory type " + std::to_string(type) +
                                              " cannot be registered: this plugin reports ptrSupport HOST only");
  }
  return Status::Ok();
}

// ---- point-to-point -------------------------------------------------------------

Result NetDevices(int* ndev) {
  return Guard("devices", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ndev, "ndev"));
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    if (!plugin->p2p_status().ok()) return Outcome::Misconfigured(plugin->p2p_status());
    *ndev = plugin->num_devices();
    return Status::Ok();
  });
}

template <typename Props>
Result NetGetProperties(int dev, Props* props) {
  return Guard("getProperties", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(props, "props"));
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    if (!plugin->p2p_status().ok()) return Outcome::Misconfigured(plugin->p2p_status());
    RS_ASSIGN_OR_RETURN(p, plugin->Properties(dev));
    FillProperties(p, props);
    return Status::Ok();
  });
}

Result NetListen(int dev, void* handle, void** listen_comm) {
  return Guard("listen", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(listen_comm, "listenComm"));
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    if (!plugin->p2p_status().ok()) return Outcome::Misconfigured(plugin->p2p_status());
    RS_ASSIGN_OR_RETURN(comm, plugin->Listen(dev, handle));
    *listen_comm = OpaqueObject::ToOpaque(comm.release());
    return Status::Ok();
  });
}

Result NetConnect(int dev, void* handle, void** send_comm, DeviceHandle** dev_comm) {
  return Guard("connect", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(send_comm, "sendComm"));
    *send_comm = nullptr;
    if (dev_comm != nullptr) *dev_comm = nullptr;  // host plugin: no device handle
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ASSIGN_OR_RETURN(comm, plugin->Connect(dev, handle));
    *send_comm = OpaqueObject::ToOpaque(comm.release());  // NULL until ready: NCCL calls again
    return Status::Ok();
  });
}

Result NetAccept(void* listen_comm, void** recv_comm, DeviceHandle** dev_comm) {
  return Guard("accept", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(recv_comm, "recvComm"));
    *recv_comm = nullptr;
    if (dev_comm != nullptr) *dev_comm = nullptr;
    RS_ASSIGN_OR_RETURN(listener, ListenComm::FromOpaque(listen_comm));
    RS_ASSIGN_OR_RETURN(comm, listener->Accept());
    *recv_comm = OpaqueObject::ToOpaque(comm.release());
    return Status::Ok();
  });
}

template <typename Size>
Result NetRegMr(void* comm, void* data, Size size, int type, void** mhandle) {
  return Guard("regMr", [&]() -> Outcome {
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(SizeFromAbi(size, &bytes));
    RS_RETURN_IF_ERROR(NonNull(mhandle, "mhandle"));
    RS_RETURN_IF_ERROR(RequireHost(type));
    *mhandle = &g_host_registration;
    return Status::Ok();
  });
}

Result NetRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  return Guard("regMrDmaBuf", [&]() -> Outcome {
    return Status(Code::kInternal, "DMA-BUF registration requested, but this plugin reports ptrSupport HOST only");
  });
}

Result NetDeregMr(void* comm, void* mhandle) { return Result::kSuccess; }

Result NetIsend(void* send_comm, void* data, int size, int tag, void* mhandle, void** request) {
  return Guard("isend", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(request, "request"));
    *request = nullptr;
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(SizeFromAbi(size, &bytes));
    RS_ASSIGN_OR_RETURN(comm, SendComm::FromOpaque(send_comm));
    RS_ASSIGN_OR_RETURN(r, comm->Isend(data, bytes, tag));
    *request = r;  // NULL: cannot post now, NCCL retries
    return Status::Ok();
  });
}

Result NetIrecv(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) {
  return Guard("irecv", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(request, "request"));
    *request = nullptr;
    if (n != 1) {
      return Status(Code::kInvalidArgument,
                    "irecv of " + std::to_string(n) + " buffers; this plugin reports maxRecvs 1");
    }
    RS_RETURN_IF_ERROR(NonNull(data, "data"));
    RS_RETURN_IF_ERROR(NonNull(sizes, "sizes"));
    RS_RETURN_IF_ERROR(NonNull(tags, "tags"));
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(SizeFromAbi(sizes[0], &bytes));
    RS_ASSIGN_OR_RETURN(comm, RecvComm::FromOpaque(recv_comm));
    RS_ASSIGN_OR_RETURN(r, comm->Irecv(data[0], bytes, tags[0]));
    *request = r;
    return Status::Ok();
  });
}

Result NetIflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  return Guard("iflush", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(request, "request"));
    *request = nullptr;  // host memory: nothing to flush
    return Status::Ok();
  });
}

Result NetTest(void* request, int* done, int* sizes) {
  return Guard("test", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(done, "done"));
    *done = 0;
    RS_ASSIGN_OR_RETURN(r, Request::FromOpaque(request));
    bool finished = false;
    size_t size = 0;
    RS_RETURN_IF_ERROR(r->owner->Test(r, &finished, &size));
    if (finished) {
      *done = 1;
      // Posted sizes are ints, and a message is never larger than its receive.
      if (sizes != nullptr) *sizes = static_cast<int>(size);
    }
    return Status::Ok();
  });
}

template <typename Comm>
Result Close(const char* what, void* comm) {
  return Guard(what, [&]() -> Outcome {
    if (comm == nullptr) return Status::Ok();
    RS_ASSIGN_OR_RETURN(c, Comm::FromOpaque(comm));
    delete c;  // joins its helper threads
    return Status::Ok();
  });
}

Result NetCloseSend(void* comm) { return Close<SendComm>("closeSend", comm); }
Result NetCloseRecv(void* comm) { return Close<RecvComm>("closeRecv", comm); }
Result NetCloseListen(void* comm) { return Close<ListenComm>("closeListen", comm); }

// ---- CollNet ----------------------------------------------------------------------

Result CollDevices(int* ndev) {
  return Guard("CollNet devices", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ndev, "ndev"));
    *ndev = 0;
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    const CollNet& collnet = plugin->collnet();
    if (!collnet.config_status().ok()) return Outcome::Misconfigured(collnet.config_status());
    // CollNet device i is named after net device i, so it needs one.
    if (plugin->p2p_status().ok() && plugin->num_devices() > 0) *ndev = collnet.num_devices();
    return Status::Ok();
  });
}

template <typename Props>
Result CollGetProperties(int dev, Props* props) {
  return Guard("CollNet getProperties", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(props, "props"));
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    if (dev < 0 || dev >= plugin->collnet().num_devices()) {
      return Status(Code::kInvalidArgument, "CollNet device " + std::to_string(dev) + " does not exist");
    }
    RS_ASSIGN_OR_RETURN(p, plugin->Properties(dev));
    FillProperties(p, props);
    return Status::Ok();
  });
}

// Forwards a CollNet slot to the core once init has run.
template <typename Fn>
Result ToCollNet(const char* what, Fn&& fn) {
  return Guard(what, [&]() -> Outcome {
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    return fn(plugin->collnet());
  });
}

Result CollListen(int dev, void* handle, void** listen_comm) {
  return ToCollNet("CollNet listen", [&](CollNet& collnet) { return collnet.Listen(dev, handle, listen_comm); });
}

Result CollConnect(void* handles[], int nranks, int rank, void* listen_comm, void** coll_comm) {
  return ToCollNet("CollNet connect",
                   [&](CollNet& collnet) { return collnet.Connect(handles, nranks, rank, listen_comm, coll_comm); });
}

Result CollReduceSupport(int data_type, int red_op, int* supported) {
  return Guard("CollNet reduceSupport", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(supported, "supported"));
    std::optional<DataType> type = DataTypeFromNccl(data_type);
    std::optional<ReduceOp> op = ReduceOpFromNccl(red_op);
    *supported = type && op && CollNet::ReduceSupported(*type, *op) ? 1 : 0;
    return Status::Ok();
  });
}

template <typename Size>
Result CollRegMr(void* coll_comm, void* data, Size size, int type, void** mhandle) {
  return Guard("CollNet regMr", [&]() -> Outcome {
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(SizeFromAbi(size, &bytes));
    RS_RETURN_IF_ERROR(RequireHost(type));
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    return plugin->collnet().RegMr(coll_comm, data, bytes, mhandle);
  });
}

Result CollRegMrDmaBuf(void* coll_comm, void* data, size_t size, int type, uint64_t offset, int fd,
                       void** mhandle) {
  return NetRegMrDmaBuf(coll_comm, data, size, type, offset, fd, mhandle);
}

Result CollDeregMr(void* coll_comm, void* mhandle) {
  return ToCollNet("CollNet deregMr", [&](CollNet& collnet) { return collnet.DeregMr(coll_comm, mhandle); });
}

Result CollIallreduce(void* coll_comm, void* send, void* recv, int count, int data_type, int red_op,
                      void* send_mhandle, void* recv_mhandle, void** request) {
  return Guard("CollNet iallreduce", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(request, "request"));
    *request = nullptr;
    size_t elements = 0;
    RS_RETURN_IF_ERROR(SizeFromAbi(count, &elements));
    std::optional<DataType> type = DataTypeFromNccl(data_type);
    std::optional<ReduceOp> op = ReduceOpFromNccl(red_op);
    if (!type || !op) {
      return Status(Code::kInvalidArgument, "iallreduce with NCCL data type " + std::to_string(data_type) +
                                                " and op " + std::to_string(red_op) +
                                                ", which reduceSupport does not report");
    }
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    return plugin->collnet().IAllReduce(coll_comm, send, recv, elements, *type, *op, request);
  });
}

// Final for now: NCCL uses these only for CollNet Direct on NVSwitch systems.
Result NotForCollNetChain(const char* what, void** request) {
  return Guard(what, [&]() -> Outcome {
    if (request != nullptr) *request = nullptr;
    return Status(Code::kInternal, std::string(what) +
                                       " is not supported by the reducers (NCCL asks for it only with CollNet "
                                       "Direct on NVSwitch systems); use NCCL_ALGO=allreduce:collnetchain");
  });
}

Result CollIallgather(void*, void*, int, Sge*, size_t, size_t, size_t, void*, void** request) {
  return NotForCollNetChain("CollNet iallgather", request);
}

Result CollIreducescatter(void*, int, Sge*, void*, size_t, size_t, size_t, int, int, void*, void** request) {
  return NotForCollNetChain("CollNet ireducescatter", request);
}

Result CollIflush(void* coll_comm, void* data, int size, void* mhandle, void** request) {
  return Guard("CollNet iflush", [&]() -> Outcome {
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(SizeFromAbi(size, &bytes));
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    return plugin->collnet().IFlush(coll_comm, data, bytes, request);
  });
}

Result CollTest(void* request, int* done, int* size) {
  return Guard("CollNet test", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(done, "done"));
    *done = 0;
    RS_ASSIGN_OR_RETURN(plugin, Instance());
    bool finished = false;
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(plugin->collnet().Test(request, &finished, &bytes));
    if (finished) {
      *done = 1;
      if (size != nullptr) *size = static_cast<int>(bytes < INT_MAX ? bytes : INT_MAX);
    }
    return Status::Ok();
  });
}

Result CollCloseColl(void* coll_comm) {
  return ToCollNet("CollNet closeColl", [&](CollNet& collnet) { return collnet.CloseColl(coll_comm); });
}

Result CollCloseListen(void* listen_comm) {
  return ToCollNet("CollNet closeListen", [&](CollNet& collnet) { return collnet.CloseListen(listen_comm); });
}

#undef RS_ASSIGN_OR_RETURN

}  // namespace
}  // namespace rs::plugin::abi

// ---- exported tables ------------------------------------------------------------------
// extern "C" gives the const objects external linkage and unmangled names;
// everything else in the library is hidden (visibility flags + exports.map).

namespace abi = rs::plugin::abi;

#define RS_EXPORT extern "C" __attribute__((visibility("default")))

RS_EXPORT const abi::NetV8 ncclNetPlugin_v8 = {
    .name = abi::kPluginName,
    .init = abi::Init,
    .devices = abi::NetDevices,
    .getProperties = abi::NetGetProperties<abi::PropertiesV8>,
    .listen = abi::NetListen,
    .connect = abi::NetConnect,
    .accept = abi::NetAccept,
    .regMr = abi::NetRegMr<size_t>,
    .regMrDmaBuf = abi::NetRegMrDmaBuf,
    .deregMr = abi::NetDeregMr,
    .isend = abi::NetIsend,
    .irecv = abi::NetIrecv,
    .iflush = abi::NetIflush,
    .test = abi::NetTest,
    .closeSend = abi::NetCloseSend,
    .closeRecv = abi::NetCloseRecv,
    .closeListen = abi::NetCloseListen,
    .getDeviceMr = nullptr,    // host plugin: NCCL never asks
    .irecvConsumed = nullptr,  // idem
};

RS_EXPORT const abi::NetV7 ncclNetPlugin_v7 = {
    .name = abi::kPluginName,
    .init = abi::Init,
    .devices = abi::NetDevices,
    .getProperties = abi::NetGetProperties<abi::PropertiesV7>,
    .listen = abi::NetListen,
    .connect = abi::NetConnect,
    .accept = abi::NetAccept,
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
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
};

RS_EXPORT const abi::CollNetV8 ncclCollNetPlugin_v8 = {
    .name = abi::kPluginName,
    .init = abi::Init,
    .devices = abi::CollDevices,
    .getProperties = abi::CollGetProperties<abi::PropertiesV8>,
    .listen = abi::CollListen,
    .connect = abi::CollConnect,
    .reduceSupport = abi::CollReduceSupport,
    .regMr = abi::CollRegMr<size_t>,
    .regMrDmaBuf = abi::CollRegMrDmaBuf,
    .deregMr = abi::CollDeregMr,
    .iallreduce = abi::CollIallreduce,
    .iallgather = abi::CollIallgather,
    .ireducescatter = abi::CollIreducescatter,
    .iflush = abi::CollIflush,
    .test = abi::CollTest,
    .closeColl = abi::CollCloseColl,
    .closeListen = abi::CollCloseListen,
};

RS_EXPORT const abi::CollNetV7 ncclCollNetPlugin_v7 = {
    .name = abi::kPluginName,
    .init = abi::Init,
    .devices = abi::CollDevices,
    .getProperties = abi::CollGetProperties<abi::PropertiesV7>,
    .listen = abi::CollListen,
    .connect = abi::CollConnect,
    .reduceSupport = abi::CollReduceSupport,
    .regMr = abi::CollRegMr<int>,
    .regMrDmaBuf = abi::CollRegMrDmaBuf,
    .deregMr = abi::CollDeregMr,
    .iallreduce = abi::CollIallreduce,
    .iflush = abi::CollIflush,
    .test = abi::CollTest,
    .closeColl = abi::CollCloseColl,
    .closeListen = abi::CollCloseListen,
};
