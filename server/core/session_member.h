// What a session and its pieces see of a rank's stream: SessionMember, the
// interface a connection implements, and ResultPart, the reduced run of a
// piece that goes to it as one RESULT frame. No I/O here: tests implement
// SessionMember with fakes.
//
// Threading: a member is called from any I/O thread, outside the session's
// mutex, except SendResult, which a piece calls under its parts_mu_ (so that
// a piece's parts reach each member in order; lock order in session.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "protocol/wire.h"

namespace rs::server {

class Piece;

// A reduced run of a piece's elements, sent as one RESULT frame: the whole
// piece, or one of its parts when the ranks take results in parts.
struct ResultPart {
  std::shared_ptr<Piece> piece;  // keeps `data` alive
  protocol::PieceHeader header;  // offset and count of the run; its CRC32C when computed
  const uint8_t* data = nullptr;
};

// One authenticated TCP stream of one rank, as the session sees it.
// Implementations must be thread-safe and must not call back into the
// session from these methods.
class SessionMember {
 public:
  virtual ~SessionMember() = default;
  virtual void SendReady() = 0;
  // Sends part.header and part.data; keeps the piece alive until sent. The
  // parts of one piece arrive in order.
  virtual void SendResult(const ResultPart& part) = 0;
  // Sends an ERROR frame, then closes the stream.
  virtual void SendErrorAndClose(const Status& status) = 0;
  // Sends a control frame (HEARTBEAT, MEMBERSHIP) ahead of queued results.
  virtual void SendControl(std::vector<uint8_t> frame) = 0;
  // Closes the stream without a word: the ranks have dropped this reducer.
  virtual void CloseQuietly() = 0;
};

}  // namespace rs::server
