// The implementations behind the exported tables' slots (abi/nccl_tables.cc
// assembles the tables from them). One function per slot, shared by every
// table version; where versions differ only in an integer type (int sizes
// in v5 - v8, size_t in v11) the function is a template over it, and the v11
// context-taking slots and the v5/v6 connect/accept (no device handle) are
// their own thin adapters. Every body runs inside Guard (abi_support.h).
//
// Thread-safety: as NCCL requires: any slot from any thread once init has
// returned; the core objects they reach are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_plugin/abi/nccl_abi.h"
#include "nccl_plugin/abi/nccl_tuner_abi.h"

namespace rs::plugin::abi {

// ---- point-to-point (net_slots.cc) ----
Result NetInit(Logger logger);  // v5 - v8
Result NetInitV11(void** ctx, uint64_t comm_id, CommConfigV11* config, Logger logger, ProfilerCallback profiler);
Result NetFinalizeV11(void* ctx);
Result NetDevices(int* ndev);
template <typename Props>
Result NetGetProperties(int dev, Props* props);
Result NetListen(int dev, void* handle, void** listen_comm);
Result NetListenV11(void* ctx, int dev, void* handle, void** listen_comm);
Result NetConnect(int dev, void* handle, void** send_comm, DeviceHandle** dev_comm);
Result NetConnectV11(void* ctx, int dev, void* handle, void** send_comm, DeviceHandle** dev_comm);
Result NetAccept(void* listen_comm, void** recv_comm, DeviceHandle** dev_comm);
// v5 and v6 (NCCL 2.12 - 2.18): no device-handle parameter.
Result NetConnectV6(int dev, void* handle, void** send_comm);
Result NetAcceptV6(void* listen_comm, void** recv_comm);
template <typename Size>
Result NetRegMr(void* comm, void* data, Size size, int type, void** mhandle);
Result NetRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
Result NetDeregMr(void* comm, void* mhandle);
Result NetIsend(void* send_comm, void* data, int size, int tag, void* mhandle, void** request);
Result NetIsendV11(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
Result NetIrecv(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
Result NetIrecvV11(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                   void** request);
Result NetIflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
Result NetTest(void* request, int* done, int* sizes);
Result NetCloseSend(void* comm);
Result NetCloseRecv(void* comm);
Result NetCloseListen(void* comm);

// ---- CollNet (collnet_slots.cc) ----
Result CollInit(Logger logger);  // v5 - v7
Result CollInitV11(void** ctx, uint64_t comm_id, Logger logger);
Result CollFinalizeV11(void* ctx);
Result CollDevices(int* ndev);
template <typename Props>
Result CollGetProperties(int dev, Props* props);
Result CollListen(int dev, void* handle, void** listen_comm);
Result CollListenV11(void* ctx, int dev, void* handle, void** listen_comm);
Result CollConnect(void* handles[], int nranks, int rank, void* listen_comm, void** coll_comm);
Result CollReduceSupport(int data_type, int red_op, int* supported);
template <typename Size>
Result CollRegMr(void* coll_comm, void* data, Size size, int type, void** mhandle);
Result CollRegMrDmaBuf(void* coll_comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
Result CollDeregMr(void* coll_comm, void* mhandle);
template <typename Count>
Result CollIallreduce(void* coll_comm, void* send, void* recv, Count count, int data_type, int red_op,
                      void* send_mhandle, void* recv_mhandle, void** request);
Result CollIflush(void* coll_comm, void* data, int size, void* mhandle, void** request);
Result CollTest(void* request, int* done, int* size);
Result CollCloseColl(void* coll_comm);
Result CollCloseListen(void* listen_comm);

// ---- tuner (tuner_slots.cc), v1 - v5 ----
Result TunerInitV1(size_t nranks, size_t nnodes, Logger logger);
Result TunerGetCollInfoV1(int coll_type, size_t nbytes, int collnet_support, int nvls_support, int num_pipe_ops,
                          int* algorithm, int* protocol, int* nchannels);
Result TunerDestroyV1();
Result TunerInitV2(size_t nranks, size_t nnodes, Logger logger, void** ctx);  // also v3, v4
Result TunerGetCollInfoV2(void* ctx, int coll_type, size_t nbytes, int collnet_support, int nvls_support,
                          int num_pipe_ops, int* algorithm, int* protocol, int* nchannels);
Result TunerGetCollInfoV3(void* ctx, int coll_type, size_t nbytes, int num_pipe_ops, float** cost_table,
                          int num_algo, int num_proto, int* nchannels);
// v4's getCollInfo is v5's; every version but v1 destroys with TunerFinalize.
Result TunerInitV5(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes, Logger logger,
                   NvlDomainInfoV5* nvl_domain_info, TunerConstantsV5* constants);
Result TunerGetCollInfo(void* ctx, int coll_type, size_t nbytes, int num_pipe_ops, float** cost_table,
                        int num_algo, int num_proto, int reg_buff, int* nchannels);
Result TunerFinalize(void* ctx);

}  // namespace rs::plugin::abi
