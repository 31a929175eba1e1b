// NCCL's limits that the plugin core is built around, in one place, without
// NCCL's types: the handle buffer, the requests NCCL keeps in flight on a
// comm, the largest transfers we let NCCL hand us, and the CollNet request
// pool sized from them. The ABI layer (abi/nccl_abi.h) pins every value that
// comes from NCCL to NCCL's own constant with a static_assert, so a change on
// either side fails the build. Facts and sources: docs/engineering/nccl-interface.md, "Limits".
//
// Thread-safety: constants only.
#pragma once

#include <cstddef>

namespace rs::plugin {

// NCCL_NET_HANDLE_MAXSIZE: the buffer listen() writes and connect() reads.
inline constexpr size_t kHandleBytes = 128;

// NCCL_NET_MAX_REQUESTS (32 since NCCL 2.19): point-to-point requests NCCL
// may keep in flight per send or receive comm. Each p2p comm holds exactly
// this many; beyond them isend/irecv answer "cannot post now" (NULL).
inline constexpr int kP2pRequestsPerComm = 32;

// CollNet: only NCCL's send proxy calls iallreduce, for one collective
// communicator at most NCCL_STEPS (8) calls per group of 8 channels, so at
// most 64 with 64 channels (transport/coll_net.cc). The pool holds four
// times that, so NCCL never sees a NULL request in normal operation; a NULL
// request is still handled (NCCL retries it).
inline constexpr int kNcclCollMaxInFlight = 64;
inline constexpr int kCollRequestPool = 256;
static_assert(kCollRequestPool >= 4 * kNcclCollMaxInFlight);

// Largest transfer NCCL accepts as maxP2pBytes / maxCollBytes (1 TiB,
// NCCL_MAX_NET_SIZE_BYTES); NCCL refuses a plugin whose values are 0 or above.
inline constexpr size_t kNcclMaxNetBytes = size_t{1} << 40;
// What we report (v11 properties): the values NCCL's own adapters give older
// plugins (MAX_NET_SIZE, MAX_COLLNET_SIZE), so every table version behaves
// alike. Both stay below 2^31 because test() reports sizes as int.
inline constexpr size_t kMaxP2pBytes = size_t{1} << 30;
inline constexpr size_t kMaxCollBytes = size_t{512} << 20;
static_assert(kMaxP2pBytes > 0 && kMaxP2pBytes <= kNcclMaxNetBytes && kMaxP2pBytes < (size_t{1} << 31));
static_assert(kMaxCollBytes > 0 && kMaxCollBytes <= kNcclMaxNetBytes && kMaxCollBytes < (size_t{1} << 31));

}  // namespace rs::plugin
