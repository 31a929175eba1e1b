// The CollNet slots: init (v5 - v7 once, v11 per communicator with a context),
// devices and properties (named after the net devices), the collective
// listen/connect, registrations, iallreduce and test. The core returns typed
// objects (collnet/collnet_comm.h); here they become NCCL's opaque pointers
// and back. iallgather and ireducescatter have no implementation: the v11
// table leaves them NULL and v5 - v7 have no such slots.
#include <climits>
#include <memory>
#include <optional>

#include "nccl_plugin/abi/abi_support.h"
#include "nccl_plugin/abi/slots.h"
#include "nccl_plugin/comm_context.h"

namespace rs::plugin::abi {
namespace {

Result Listen(void* ctx, int dev, void* handle, void** listen_comm) {
  return Guard("CollNet listen", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(listen_comm, "listenComm"));
    *listen_comm = nullptr;
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    uint64_t comm_id = 0;
    if (ctx != nullptr) {
      RS_ABI_ASSIGN_OR_RETURN(c, plugin->FindContext(ctx, CommContext::Kind::kCollNet));
      comm_id = c->comm_id();
    }
    RS_ABI_ASSIGN_OR_RETURN(comm, plugin->collnet().Listen(dev, handle, comm_id));
    *listen_comm = OpaqueObject::ToOpaque(comm.release());
    return Status::Ok();
  });
}

}  // namespace

Result CollInit(Logger logger) {
  return Guard("CollNet init", [&]() -> Outcome {
    InitLibrary(logger);
    return Status::Ok();
  });
}

Result CollInitV11(void** ctx, uint64_t comm_id, Logger logger) {
  return Guard("CollNet init", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ctx, "ctx"));
    *ctx = nullptr;
    InitLibrary(logger);
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    *ctx = OpaqueObject::ToOpaque(plugin->OpenContext(CommContext::Kind::kCollNet, comm_id));
    return Status::Ok();
  });
}

Result CollFinalizeV11(void* ctx) {
  return Guard("CollNet finalize", [&]() -> Outcome {
    if (ctx == nullptr) return Status::Ok();
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    return plugin->CloseContext(ctx, CommContext::Kind::kCollNet);
  });
}

Result CollDevices(int* ndev) {
  return Guard("CollNet devices", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(ndev, "ndev"));
    *ndev = 0;
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
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
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    if (dev < 0 || dev >= plugin->collnet().num_devices()) {
      return Status(Code::kInvalidArgument, "CollNet device " + std::to_string(dev) + " does not exist");
    }
    RS_ABI_ASSIGN_OR_RETURN(p, plugin->Properties(dev));
    FillProperties(p, props);
    return Status::Ok();
  });
}
template Result CollGetProperties<PropertiesV6>(int, PropertiesV6*);
template Result CollGetProperties<PropertiesV7>(int, PropertiesV7*);
template Result CollGetProperties<PropertiesV11>(int, PropertiesV11*);

Result CollListen(int dev, void* handle, void** listen_comm) { return Listen(nullptr, dev, handle, listen_comm); }

Result CollListenV11(void* ctx, int dev, void* handle, void** listen_comm) {
  return Listen(ctx, dev, handle, listen_comm);
}

Result CollConnect(void* handles[], int nranks, int rank, void* listen_comm, void** coll_comm) {
  return Guard("CollNet connect", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(coll_comm, "collComm"));
    *coll_comm = nullptr;
    RS_ABI_ASSIGN_OR_RETURN(listen, CollListenComm::FromOpaque(listen_comm));
    RS_ABI_ASSIGN_OR_RETURN(plugin, Instance());
    StatusOr<std::unique_ptr<CollComm>> comm = plugin->collnet().Connect(handles, nranks, rank, *listen);
    if (!comm.ok()) {
      // After a failed connect NCCL forgets the listen comm without closing
      // it (transport/coll_net.cc, sharedConnect), so it is freed here.
      delete listen;
      plugin->watch().ConnectFailed(comm.status());
      return comm.status();
    }
    plugin->watch().CollNetConnected();
    *coll_comm = OpaqueObject::ToOpaque(comm->release());
    return Status::Ok();
  });
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
    RS_RETURN_IF_ERROR(NonNull(mhandle, "mhandle"));
    RS_RETURN_IF_ERROR(RequireHost(type));
    RS_ABI_ASSIGN_OR_RETURN(comm, CollComm::FromOpaque(coll_comm));
    RS_ABI_ASSIGN_OR_RETURN(reg, comm->RegMr(data, bytes));
    *mhandle = reg;
    return Status::Ok();
  });
}
template Result CollRegMr<int>(void*, void*, int, int, void**);
template Result CollRegMr<size_t>(void*, void*, size_t, int, void**);

Result CollRegMrDmaBuf(void* coll_comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  return NetRegMrDmaBuf(coll_comm, data, size, type, offset, fd, mhandle);
}

Result CollDeregMr(void* coll_comm, void* mhandle) {
  return Guard("CollNet deregMr", [&]() -> Outcome {
    RS_ABI_ASSIGN_OR_RETURN(comm, CollComm::FromOpaque(coll_comm));
    return comm->DeregMr(mhandle);
  });
}

template <typename Count>
Result CollIallreduce(void* coll_comm, void* send, void* recv, Count count, int data_type, int red_op,
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
    RS_ABI_ASSIGN_OR_RETURN(comm, CollComm::FromOpaque(coll_comm));
    RS_ABI_ASSIGN_OR_RETURN(r, comm->IAllReduce(send, recv, elements, *type, *op, send_mhandle, recv_mhandle));
    *request = r;  // NULL: the pool is full, NCCL retries
    return Status::Ok();
  });
}
template Result CollIallreduce<int>(void*, void*, void*, int, int, int, void*, void*, void**);
template Result CollIallreduce<size_t>(void*, void*, void*, size_t, int, int, void*, void*, void**);

Result CollIflush(void* coll_comm, void*, int, void*, void** request) {
  return Guard("CollNet iflush", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(request, "request"));
    *request = nullptr;  // host memory: nothing to flush (NCCL never asks without GPUDirect)
    return CollComm::FromOpaque(coll_comm).status();
  });
}

Result CollTest(void* request, int* done, int* size) {
  return Guard("CollNet test", [&]() -> Outcome {
    RS_RETURN_IF_ERROR(NonNull(done, "done"));
    *done = 0;
    RS_ABI_ASSIGN_OR_RETURN(r, CollRequest::FromOpaque(request));
    bool finished = false;
    size_t bytes = 0;
    RS_RETURN_IF_ERROR(r->owner->Test(r, &finished, &bytes));
    if (finished) {
      *done = 1;
      if (size != nullptr) *size = static_cast<int>(bytes < INT_MAX ? bytes : INT_MAX);
    }
    return Status::Ok();
  });
}

Result CollCloseColl(void* coll_comm) {
  return Guard("CollNet closeColl", [&]() -> Outcome {
    RS_ABI_ASSIGN_OR_RETURN(comm, CollComm::FromOpaque(coll_comm));
    delete comm;  // says goodbye to the reducers and joins the client's threads
    return Status::Ok();
  });
}

Result CollCloseListen(void* listen_comm) {
  return Guard("CollNet closeListen", [&]() -> Outcome {
    RS_ABI_ASSIGN_OR_RETURN(listen, CollListenComm::FromOpaque(listen_comm));
    delete listen;
    return Status::Ok();
  });
}

}  // namespace rs::plugin::abi
