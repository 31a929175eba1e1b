// The point-to-point slots: init (v5 - v8 once per process, v11 per
// communicator with a context), devices and properties, connection setup,
// host-memory registration, isend/irecv/test and close. Sizes arrive as int
// (v5 - v8) or size_t (v11) and meet the core as size_t.
#include <memory>

#include "nccl_plugin/abi/abi_support.h"
#include "nccl_plugin/abi/slots.h"
#include "nccl_plugin/comm_context.h"
#include "nccl_plugin/p2p/recv_comm.h"

namespace rs::plugin::abi {
namespace {

// Host memory needs no registration; NCCL only needs a non-NULL handle.
char g_host_registration;

Status CheckContext(void* ctx) {
  if (ctx == nullptr) return Status::Ok();  // NCCL always passes one; tolerate none
  RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
  return plugin->FindContext(ctx, CommContext::Kind::kNet).status();
}

template <typename Size>
Result Isend(void* send_comm, void* data, Size size, int tag, void** request) {
  return Guard("isend", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(request, "request"));
    *request = nullptr;
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(SizeFromAbi(size, &bytes));
    if (bytes > kMaxP2pBytes) {
      return Status(Code::kInvalidArgument, "isend of " + std::to_string(bytes) + " bytes, above maxP2pBytes");
    }
    RS_ABI_ASSIGN_OR_RETURN(comm, SendComm::FromOpaque(send_comm));
    // Every communicator's init is over once data moves: the moment to tell
    // whether NCCL will ever choose the reducers (collnet_watch.h, case g),
    // and, under REDUCER_REQUIRED=1, to stop a job that would run without them.
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    plugin->watch().FirstTransfer();
    if (plugin->watch().failed()) return plugin->watch().required_failure();
    RS_ABI_ASSIGN_OR_RETURN(r, comm->Isend(data, bytes, tag));
    *request = r;  // NULL: cannot post now, NCCL retries
    return Status::Ok();
  });
}

template <typename Size>
Result Irecv(void* recv_comm, int n, void** data, Size* sizes, int* tags, void** request) {
  return Guard("irecv", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(request, "request"));
    // v11 may hand in kOptionalRecvCompletion here: a hint we ignore (every
    // receive is reported complete).
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
    if (bytes > kMaxP2pBytes) {
      return Status(Code::kInvalidArgument, "irecv of " + std::to_string(bytes) + " bytes, above maxP2pBytes");
    }
    RS_ABI_ASSIGN_OR_RETURN(comm, RecvComm::FromOpaque(recv_comm));
    RS_ABI_ASSIGN_OR_RETURN(r, comm->Irecv(data[0], bytes, tags[0]));
    *request = r;
    return Status::Ok();
  });
}

template <typename Comm>
Result Close(const char* what, void* comm) {
  return Guard(what, [&]() -> Outcome {
    if (comm == nullptr) return Status::Ok();
    RS_ABI_ASSIGN_OR_RETURN(c, Comm::FromOpaque(comm));
    delete c;  // joins its helper threads
    return Status::Ok();
  });
}

}  // namespace

Result NetInit(Logger logger) {
  return Guard("init", [&]() -> Outcome {
    InitLibrary(logger);
    return Status::Ok();
  });
}

Result NetInitV11(void** ctx, uint64_t comm_id, CommConfigV11* config, Logger logger, ProfilerCallback profiler) {
  return Guard("init", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ctx, "ctx"));
    *ctx = nullptr;
    InitLibrary(logger);
    // trafficClass (config) is not applied: plain TCP, no traffic classes.
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    *ctx = OpaqueObject::ToOpaque(plugin->OpenContext(CommContext::Kind::kNet, comm_id));
    return Status::Ok();
  });
}

Result NetFinalizeV11(void* ctx) {
  return Guard("finalize", [&]() -> Outcome {
    if (ctx == nullptr) return Status::Ok();
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    return plugin->CloseContext(ctx, CommContext::Kind::kNet);
  });
}

Result NetDevices(int* ndev) {
  return Guard("devices", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ndev, "ndev"));
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    if (!plugin->p2p_status().ok()) return Outcome::Misconfigured(plugin->p2p_status());
    *ndev = plugin->num_devices();
    return Status::Ok();
  });
}

template <typename Props>
Result NetGetProperties(int dev, Props* props) {
  return Guard("getProperties", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(props, "props"));
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    if (!plugin->p2p_status().ok()) return Outcome::Misconfigured(plugin->p2p_status());
    RS_ABI_ASSIGN_OR_RETURN(p, plugin->Properties(dev));
    FillProperties(p, props);
    return Status::Ok();
  });
}
template Result NetGetProperties<PropertiesV6>(int, PropertiesV6*);
template Result NetGetProperties<PropertiesV7>(int, PropertiesV7*);
template Result NetGetProperties<PropertiesV8>(int, PropertiesV8*);
template Result NetGetProperties<PropertiesV11>(int, PropertiesV11*);

Result NetListen(int dev, void* handle, void** listen_comm) {
  return Guard("listen", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(listen_comm, "listenComm"));
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    if (!plugin->p2p_status().ok()) return Outcome::Misconfigured(plugin->p2p_status());
    RS_ABI_ASSIGN_OR_RETURN(comm, plugin->Listen(dev, handle));
    *listen_comm = OpaqueObject::ToOpaque(comm.release());
    return Status::Ok();
  });
}

Result NetListenV11(void* ctx, int dev, void* handle, void** listen_comm) {
  if (Result r = Guard("listen", [&]() -> Outcome { return CheckContext(ctx); }); r != Result::kSuccess) return r;
  return NetListen(dev, handle, listen_comm);
}

Result NetConnect(int dev, void* handle, void** send_comm, DeviceHandle** dev_comm) {
  return Guard("connect", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(send_comm, "sendComm"));
    *send_comm = nullptr;
    if (dev_comm != nullptr) *dev_comm = nullptr;  // host plugin: no device handle
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    RS_ABI_ASSIGN_OR_RETURN(comm, plugin->Connect(dev, handle));
    *send_comm = OpaqueObject::ToOpaque(comm.release());  // NULL until ready: NCCL calls again
    return Status::Ok();
  });
}

Result NetConnectV11(void* ctx, int dev, void* handle, void** send_comm, DeviceHandle** dev_comm) {
  if (Result r = Guard("connect", [&]() -> Outcome { return CheckContext(ctx); }); r != Result::kSuccess) return r;
  return NetConnect(dev, handle, send_comm, dev_comm);
}

Result NetAccept(void* listen_comm, void** recv_comm, DeviceHandle** dev_comm) {
  return Guard("accept", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(recv_comm, "recvComm"));
    *recv_comm = nullptr;
    if (dev_comm != nullptr) *dev_comm = nullptr;
    RS_ABI_ASSIGN_OR_RETURN(listener, ListenComm::FromOpaque(listen_comm));
    RS_ABI_ASSIGN_OR_RETURN(comm, listener->Accept());
    *recv_comm = OpaqueObject::ToOpaque(comm.release());
    return Status::Ok();
  });
}

// A host-only plugin never fills a device handle, so v5/v6 (which have none)
// are v7's slots with NULL there.
Result NetConnectV6(int dev, void* handle, void** send_comm) {
  return NetConnect(dev, handle, send_comm, nullptr);
}

Result NetAcceptV6(void* listen_comm, void** recv_comm) { return NetAccept(listen_comm, recv_comm, nullptr); }

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
template Result NetRegMr<int>(void*, void*, int, int, void**);
template Result NetRegMr<size_t>(void*, void*, size_t, int, void**);

Result NetRegMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) {
  return Guard("regMrDmaBuf", [&]() -> Outcome {
    return Status(Code::kInternal, "DMA-BUF registration requested, but this plugin reports ptrSupport HOST only");
  });
}

Result NetDeregMr(void*, void*) { return Result::kSuccess; }

Result NetIsend(void* send_comm, void* data, int size, int tag, void*, void** request) {
  return Isend(send_comm, data, size, tag, request);
}

Result NetIsendV11(void* send_comm, void* data, size_t size, int tag, void*, void*, void** request) {
  return Isend(send_comm, data, size, tag, request);
}

Result NetIrecv(void* recv_comm, int n, void** data, int* sizes, int* tags, void**, void** request) {
  return Irecv(recv_comm, n, data, sizes, tags, request);
}

Result NetIrecvV11(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void**, void**, void** request) {
  return Irecv(recv_comm, n, data, sizes, tags, request);
}

Result NetIflush(void*, int, void**, int*, void**, void** request) {
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
    RS_ABI_ASSIGN_OR_RETURN(r, Request::FromOpaque(request));
    bool finished = false;
    size_t size = 0;
    RS_RETURN_IF_ERROR(r->owner->Test(r, &finished, &size));
    if (finished) {
      *done = 1;
      // A message is never larger than its receive, and no receive larger
      // than maxP2pBytes (< 2^31) is accepted.
      if (sizes != nullptr) *sizes = static_cast<int>(size);
    }
    return Status::Ok();
  });
}

Result NetCloseSend(void* comm) { return Close<SendComm>("closeSend", comm); }
Result NetCloseRecv(void* comm) { return Close<RecvComm>("closeRecv", comm); }
Result NetCloseListen(void* comm) { return Close<ListenComm>("closeListen", comm); }

}  // namespace rs::plugin::abi
