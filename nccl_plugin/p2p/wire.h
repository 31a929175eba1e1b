// The point-to-point transport's wire formats: the listen handle NCCL
// carries from the receiving rank to the sending rank, the hello every new
// socket opens with, and the fixed-size frames on a comm's control socket.
// Both ends run this same plugin build on the same architecture (NCCL makes
// the same assumption), so structs travel as raw bytes; the magic and version
// fields catch a peer that does not.
//
// Control conversation on one comm (one direction of data, sender -> receiver):
//   receiver -> sender: kClearToSend{tag, posted size} for each irecv, in order
//   sender -> receiver: kData{tag, size} (+ payload when size <= kInlineMax)
//                       or kRejected{reason, tag, size} when the posted
//                       receive cannot take the send (too small, other tag),
//                       so both sides report the same error and stay in step.
// Payloads above kInlineMax go over the data sockets instead (data_sockets.h).
//
// Thread-safety: plain data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_plugin/nccl_limits.h"

namespace rs::plugin {

inline constexpr uint32_t kHandleMagic = 0x52444E48;  // "HNDR"
inline constexpr uint32_t kHelloMagic = 0x52444C48;   // "HLDR"
inline constexpr uint16_t kP2pVersion = 1;
inline constexpr size_t kInlineMax = 64 * 1024;       // larger payloads use the data sockets
inline constexpr int kMaxDataSockets = 64;

// What listen() writes into NCCL's handle buffer; read with memcpy (NCCL's
// buffer has no particular alignment).
struct P2pHandle {
  uint32_t magic;
  uint16_t version;
  uint16_t addr_len;
  uint64_t listen_nonce;  // a connector must echo it: guards against stale handles
  uint8_t addr[28];       // sockaddr_in or sockaddr_in6 of the listener
  uint32_t reserved;
  // Used by the connecting side only: NCCL calls connect() again with the
  // same handle buffer until it returns a comm, so the in-progress connection
  // (a Connector*) is kept here. Zero as sent by the listener.
  uint64_t connect_stage;
};
static_assert(sizeof(P2pHandle) <= kHandleBytes, "the handle must fit NCCL's 128 bytes");

struct HelloFrame {
  uint32_t magic;
  uint16_t version;
  uint16_t socket_index;  // 0 = control, 1..data_sockets = data
  uint16_t data_sockets;
  uint16_t reserved;
  uint32_t reserved2;
  uint64_t listen_nonce;
  uint64_t conn_id;  // groups the sockets of one comm at the acceptor
};
static_assert(sizeof(HelloFrame) == 32);

enum class FrameType : uint32_t {
  kClearToSend = 1,
  kData = 2,
  kRejected = 3,
};

enum class RejectReason : uint32_t {
  kNone = 0,
  kTooLarge = 1,
  kTagMismatch = 2,
};

struct ControlFrame {
  FrameType type;
  int32_t tag;           // CTS: the posted tag; data/rejected: the send's tag
  uint64_t size;         // CTS: bytes posted; data/rejected: bytes sent
  uint64_t posted_size;  // rejected: what the receive was posted with
  RejectReason reason;   // rejected only
  int32_t posted_tag;    // rejected: the tag the receive was posted with
};
static_assert(sizeof(ControlFrame) == 32);

}  // namespace rs::plugin
