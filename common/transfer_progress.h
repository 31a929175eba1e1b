// How much one system call of a data-plane read or write may move, and the
// completion condition that counts a transfer's progress for liveness
// (protocol/liveness.h). Here in common/ because the framed-socket layer
// (framed_socket.h) writes with it and must not depend on protocol/.
//
// Threading: a CountProgress belongs to the one transfer it is passed to.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/socket_options.h"

namespace rs {

// The most one system call may move. Asio's own transfer_all stops at
// 64 KiB, which cuts a 1 MiB piece into 16 reads or writes (and as many
// wake-ups); a larger bound lets one call take what the socket holds.
inline constexpr size_t kMaxTransferBytes = 16 << 20;

// A completion condition for asio::async_read / async_write that counts
// progress (each time more bytes have moved) into *counter, so a large frame
// arriving slowly still counts as a live peer. Otherwise it behaves as
// asio::transfer_all, without its 64 KiB bound per call. For a read into one
// buffer of `total` bytes, `low_water` (optional) is kept at what is still
// missing, so the reader wakes once (socket_options.h); the handler resets
// it. Asio does not consult it after the read or write that completes the
// transfer, so the completion handler must count that one (a transfer done
// in one go counts once, in the handler). Header-only and free of Asio types.
struct CountProgress {
  uint64_t* counter;
  ReceiveLowWater* low_water = nullptr;
  size_t total = 0;
  size_t seen = 0;
  template <typename ErrorCode>
  size_t operator()(const ErrorCode& ec, size_t transferred) {
    if (transferred > seen) {
      seen = transferred;
      ++*counter;
    }
    if (ec) return 0;
    if (low_water != nullptr && transferred < total) low_water->Expect(total - transferred);
    return kMaxTransferBytes;
  }
};

}  // namespace rs
