// The RESULT frames of one stream to a reducer, with no socket: what a
// result's piece header means (which operation, where its elements go, the
// session's watermark it carries) and what is done once its elements are in
// (the CRC check, a part on a 16-bit wire widened into the float32 receive
// buffer, the piece and perhaps the operation complete). ReducerStream
// (reducer_stream.h) reads the bytes where Begin says and calls Land.
//
// While the elements are read, the read holds a lease on the operation
// (Part::lease, operation.h): the caller may not free its receive buffer
// before the bytes are in place, and Land gives the lease back, whatever
// the outcome. The operation a result is for is asked of the owner once per
// operation, not per frame (it takes the client's lock): consecutive results
// mostly belong to one operation.
//
// Threading: not thread-safe; the stream's I/O thread owns it. The owner's
// calls are made on that thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <asio/buffer.hpp>

#include "client/operation.h"
#include "common/status.h"
#include "protocol/wire.h"

namespace rs::client {

class ResultReader {
 public:
  // What the reader asks of the stream's owner (StreamOwner's calls of the
  // same names, for this stream).
  class Owner {
   public:
    // The operation `seq`, if this rank still has it running.
    virtual std::shared_ptr<OperationImpl> FindOperation(uint64_t seq) = 0;
    // A RESULT carried the session's watermark for `epoch`: true when the
    // rank took it (it is then not passed on again until it changes).
    virtual bool OnWatermark(uint32_t epoch, uint64_t watermark) = 0;
    virtual void OperationComplete(uint64_t seq) = 0;

   protected:
    ~Owner() = default;
  };

  // Where a result's elements are to be read, and what holds the
  // operation's buffers meanwhile.
  struct Part {
    OpLease lease;         // on the operation; empty when there is none, or it has its result
    bool claimed = false;  // the elements are this operation's, not stale ones to drain
    asio::mutable_buffer into;  // the receive buffer, the wire-type staging, or the drain
  };

  // `reducer`: the reducer's index in the client's list (what the
  // operation checks a result against); `hop` names the path in a CRC
  // error ("reducer 10.0.0.5:7450 -> rank 3"); `crc`: results are checked
  // when they carry a CRC.
  ResultReader(uint32_t reducer, std::string hop, bool crc, Owner& owner);
  ResultReader(const ResultReader&) = delete;
  ResultReader& operator=(const ResultReader&) = delete;

  // A RESULT's piece header (`payload_bytes`: its frame's payload). Fills
  // `part` with where its elements go; an error (a header that does not
  // decode, a result that does not match what was sent) is the stream's
  // failure, to be named by the caller.
  Status Begin(std::span<const uint8_t> piece_header, uint32_t payload_bytes, uint64_t max_piece_bytes,
               Part* part);
  // The last Begin's header: what the result answered of the pieces sent.
  const protocol::PieceHeader& header() const { return header_; }
  // The read of `part`'s bytes ended: all of them when `arrived`. Puts a
  // claimed result in place (widened where it came narrow), completes the
  // piece and perhaps the operation (Owner::OperationComplete), and gives
  // the lease back. An error: the result failed its CRC check (fatal for
  // the session: the data was corrupted on its way).
  Status Land(Part part, bool arrived);
  // The stream is closing: it asks for no operation again.
  void Forget() { result_op_.reset(); }

 private:
  Status CheckCrc(const uint8_t* data) const;
  // A lease on the operation a RESULT is for; empty if there is none, or it
  // has its result already.
  OpLease LeaseFor(uint64_t seq);

  const uint32_t reducer_;
  const std::string hop_;
  const bool crc_;
  Owner& owner_;
  protocol::PieceHeader header_;
  // The operation the last RESULT was for. Asked first, without the
  // client's lock: consecutive results mostly belong to one operation.
  std::shared_ptr<OperationImpl> result_op_;
  // The last watermark the owner took from this stream (OnWatermark).
  uint32_t watermark_epoch_ = 0;
  uint64_t watermark_ = 0;
  bool ends_piece_ = false;  // header_'s elements complete their piece
  // The result part is in the wire type: read into wire_result_, then
  // widened into the receive buffer.
  bool narrow_ = false;
  std::vector<uint8_t> wire_result_;
  std::vector<uint8_t> discard_;  // a result no operation takes is drained here
};

}  // namespace rs::client
