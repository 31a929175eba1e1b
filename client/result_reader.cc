#include "client/result_reader.h"

#include <cstdio>

#include "client/wire_codec.h"
#include "protocol/crc32c.h"

namespace rs::client {

ResultReader::ResultReader(uint32_t reducer, std::string hop, bool crc, Owner& owner)
    : reducer_(reducer), hop_(std::move(hop)), crc_(crc), owner_(owner) {}

Status ResultReader::Begin(std::span<const uint8_t> piece_header, uint32_t payload_bytes, uint64_t max_piece_bytes,
                           Part* part) {
  Status st = protocol::DecodePieceHeader(piece_header, payload_bytes, max_piece_bytes, &header_);
  if (!st.ok()) return st;
  const protocol::PieceHeader& h = header_;
  if (h.watermark != 0 && (h.watermark != watermark_ || h.epoch != watermark_epoch_) &&
      owner_.OnWatermark(h.epoch, h.watermark)) {
    watermark_epoch_ = h.epoch;
    watermark_ = h.watermark;
  }
  // Held until the result is in place: the read writes into the
  // operation's receive buffer.
  OpLease lease = LeaseFor(h.seq);
  OperationImpl::Claim claim = OperationImpl::Claim::kStale;
  ends_piece_ = false;
  if (lease) {
    claim = lease->ClaimResult(reducer_, h, &ends_piece_, &st);
    if (claim == OperationImpl::Claim::kError) return st;  // the lease goes back: nothing is read
  }
  const bool claimed = claim == OperationImpl::Claim::kClaimed;
  narrow_ = claimed && (h.flags & protocol::kPieceWideSum) != 0 && h.dtype != DataType::kFloat32;
  part->claimed = claimed;
  if (claimed && !lease->shadow()) {
    // In the operation's type: a part on a 16-bit wire lands widened.
    const size_t elem = DataTypeSize(lease->dtype());
    const size_t offset = h.offset * elem;
    lease->BeforeResult(offset, h.count * elem);  // the failover copy of an in-place input first
    uint8_t* dest = static_cast<uint8_t*>(lease->recv()) + offset;
    if (narrow_) {
      wire_result_.resize(h.PayloadBytes());
      dest = wire_result_.data();
    }
    part->into = asio::buffer(dest, h.PayloadBytes());
  } else {
    // Failed locally, an epoch left behind, or redone by a shadow (whose
    // results this rank has already): drain the bytes.
    discard_.resize(h.PayloadBytes());
    part->into = asio::buffer(discard_);
  }
  part->lease = std::move(lease);
  return Status::Ok();
}

OpLease ResultReader::LeaseFor(uint64_t seq) {
  // A lease is given only while the operation has no result, so a stale
  // hit (it completed or failed, or a shadow redoes it under the same seq)
  // comes back empty and the client's table is asked.
  if (result_op_ && result_op_->seq() == seq) {
    if (OpLease lease = OperationImpl::Lease(result_op_)) return lease;
  }
  result_op_ = owner_.FindOperation(seq);
  return OperationImpl::Lease(result_op_);
}

Status ResultReader::CheckCrc(const uint8_t* data) const {
  const protocol::PieceHeader& h = header_;
  if (!crc_ || (h.flags & protocol::kPieceCrc) == 0) return Status::Ok();
  const uint32_t got = protocol::Crc32c(data, h.PayloadBytes());
  if (got == h.crc) return Status::Ok();
  char values[64];
  std::snprintf(values, sizeof(values), "0x%08x, the reducer sent 0x%08x", got, h.crc);
  return Status(Code::kProtocol, "CRC32C mismatch on hop " + hop_ + ": the result of operation " +
                                     std::to_string(h.seq) + " piece " + std::to_string(h.piece) + " arrived as " +
                                     values + " (data corrupted in transit: NIC, memory or a middlebox)");
}

Status ResultReader::Land(Part part, bool arrived) {
  OpLease& lease = part.lease;
  if (!lease) return Status::Ok();
  if (part.claimed && arrived) {
    uint8_t* recv = nullptr;
    const uint8_t* data = discard_.data();
    if (!lease->shadow()) {
      recv = static_cast<uint8_t*>(lease->recv()) + header_.offset * DataTypeSize(lease->dtype());
      data = narrow_ ? wire_result_.data() : recv;
    }
    Status corrupt = CheckCrc(data);
    if (!corrupt.ok()) {
      lease.reset();  // before the failure is reported
      return corrupt;
    }
    if (narrow_ && !lease->shadow()) {
      WidenPart(header_.dtype, reinterpret_cast<const uint16_t*>(wire_result_.data()), reinterpret_cast<float*>(recv),
                header_.count);
    }
    if (ends_piece_ && lease->PieceDone(header_.epoch)) {
      result_op_.reset();
      owner_.OperationComplete(lease->seq());
    }
  }
  lease.reset();  // the result is in place (or dropped): before reading on
  return Status::Ok();
}

}  // namespace rs::client
