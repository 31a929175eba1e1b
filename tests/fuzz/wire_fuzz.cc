// Fuzz target: the frame decoders (protocol/wire.*, and MEMBERSHIP from
// protocol/membership.*). The input is a frame
// header followed by a payload, as a peer would send them. Properties: every
// decoder refuses or accepts without reading out of bounds; what it accepts
// satisfies the documented bounds and encodes back to what was decoded.
#include <algorithm>
#include <cstring>
#include <limits>

#include "protocol/byte_io.h"
#include "protocol/membership.h"
#include "protocol/wire.h"
#include "tests/fuzz/fuzz_check.h"

namespace rs::protocol {
namespace {

void CheckHeader(std::span<const uint8_t> bytes, uint64_t max_data) {
  FrameHeader h;
  const Status st = DecodeHeader(bytes, max_data, &h, "fuzzer");
  if (!st.ok()) return;
  FUZZ_CHECK(h.version == kProtocolVersion);
  const bool data = h.type == FrameType::kData || h.type == FrameType::kResult;
  FUZZ_CHECK(h.payload_bytes <= (data ? max_data : kMaxControlPayload));
  uint8_t again[kHeaderBytes];
  EncodeHeader(h, again);
  FrameHeader h2;
  FUZZ_CHECK(DecodeHeader(std::span(again, kHeaderBytes), max_data, &h2).ok());
  FUZZ_CHECK(h2.type == h.type && h2.payload_bytes == h.payload_bytes);
  // The magic, version, type and length are the first 12 bytes; the rest is reserved.
  FUZZ_CHECK(std::memcmp(again, bytes.data(), 12) == 0);
}

std::span<const uint8_t> PayloadOf(const std::vector<uint8_t>& frame) {
  return std::span(frame).subspan(kHeaderBytes);
}

void CheckPayloads(std::span<const uint8_t> p) {
  Hello hello;
  if (DecodeHello(p, &hello).ok()) {
    FUZZ_CHECK(hello.world >= 1 && hello.world <= kMaxWorld);
    FUZZ_CHECK(hello.rank < hello.world);
    FUZZ_CHECK(hello.streams >= 1 && hello.streams <= kMaxStreams && hello.stream < hello.streams);
    const auto frame = EncodeHello(hello);
    FUZZ_CHECK(PayloadOf(frame).size() == p.size() && std::equal(p.begin(), p.end(), PayloadOf(frame).begin()));
  }
  Challenge challenge;
  if (DecodeChallenge(p, &challenge).ok()) {
    Challenge again;
    FUZZ_CHECK(DecodeChallenge(PayloadOf(EncodeChallenge(challenge)), &again).ok());
    FUZZ_CHECK(again.server_nonce == challenge.server_nonce && again.token_required == challenge.token_required);
  }
  Auth auth;
  if (DecodeAuth(p, &auth).ok()) {
    const auto frame = EncodeAuth(auth);
    FUZZ_CHECK(std::equal(p.begin(), p.end(), PayloadOf(frame).begin()));
  }
  Welcome welcome;
  if (DecodeWelcome(p, &welcome).ok()) {
    FUZZ_CHECK(welcome.max_piece_bytes > 0);
    const auto frame = EncodeWelcome(welcome);
    FUZZ_CHECK(std::equal(p.begin(), p.end(), PayloadOf(frame).begin()));
  }
  Heartbeat heartbeat;
  if (DecodeHeartbeat(p, &heartbeat).ok()) {
    const auto frame = EncodeHeartbeat(heartbeat);
    FUZZ_CHECK(PayloadOf(frame).size() == p.size() && std::equal(p.begin(), p.end(), PayloadOf(frame).begin()));
  }
  MembershipFrame membership;
  if (DecodeMembership(p, &membership).ok()) {
    FUZZ_CHECK(membership.kind >= MembershipKind::kReport && membership.kind <= MembershipKind::kEvict);
    FUZZ_CHECK(membership.live.size() <= kMaxReducers);
    for (uint32_t r : membership.live.Members()) FUZZ_CHECK(r < membership.live.size());
    // What was accepted encodes to a frame that decodes to the same values
    // (the encoder may normalise bits the decoder ignores, so compare values).
    const auto frame = EncodeMembership(membership);
    FrameHeader fh;
    FUZZ_CHECK(DecodeHeader(std::span(frame).first(kHeaderBytes), 0, &fh).ok());
    FUZZ_CHECK(fh.type == FrameType::kMembership && fh.payload_bytes == frame.size() - kHeaderBytes);
    MembershipFrame again;
    FUZZ_CHECK(DecodeMembership(PayloadOf(frame), &again).ok());
    FUZZ_CHECK(again.kind == membership.kind && again.epoch == membership.epoch && again.seq == membership.seq);
    FUZZ_CHECK(again.live.size() == membership.live.size() && again.live.Members() == membership.live.Members());
  }
  ErrorFrame error;
  if (DecodeError(p, &error).ok()) {
    FUZZ_CHECK(error.code != Code::kOk);
    FUZZ_CHECK(error.message.size() + 4 == p.size());
    ErrorFrame again;
    const auto frame = EncodeError(error);
    FUZZ_CHECK(PayloadOf(frame).size() <= kMaxControlPayload);
    FUZZ_CHECK(DecodeError(PayloadOf(frame), &again).ok());
    FUZZ_CHECK(again.code == error.code);
    FUZZ_CHECK(error.message.compare(0, again.message.size(), again.message) == 0);
  }
}

void CheckPieceHeader(std::span<const uint8_t> p, uint32_t payload_bytes, uint64_t max_piece) {
  PieceHeader h;
  if (!DecodePieceHeader(p, payload_bytes, max_piece, &h).ok()) return;
  const uint64_t elem = DataTypeSize(h.dtype);
  FUZZ_CHECK(h.pieces > 0 && h.piece < h.pieces);
  FUZZ_CHECK(h.count > 0 && h.count * elem <= max_piece);
  FUZZ_CHECK(h.offset <= h.total_count && h.count <= h.total_count - h.offset);
  FUZZ_CHECK(payload_bytes == kPieceHeaderBytes + h.count * elem);
  FUZZ_CHECK(h.PayloadBytes() == h.count * elem);
  std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> frame;
  EncodePieceFrame(FrameType::kData, h, &frame);
  FrameHeader fh;
  const uint64_t max_data = max_piece > UINT32_MAX ? UINT64_MAX : kPieceHeaderBytes + max_piece;
  FUZZ_CHECK(DecodeHeader(frame, max_data, &fh).ok());
  FUZZ_CHECK(fh.payload_bytes == payload_bytes);
  PieceHeader again;
  FUZZ_CHECK(DecodePieceHeader(std::span(frame).subspan(kHeaderBytes), fh.payload_bytes, max_piece, &again).ok());
  FUZZ_CHECK(again.seq == h.seq && again.piece == h.piece && again.pieces == h.pieces &&
             again.dtype == h.dtype && again.op == h.op && again.total_count == h.total_count &&
             again.offset == h.offset && again.count == h.count && again.epoch == h.epoch &&
             again.watermark == h.watermark && again.flags == h.flags && again.crc == h.crc);
  if (h.flags & kPieceCrc) {
    // SetPieceCrc on a frame without the flag gives the same frame back.
    PieceHeader plain = h;
    plain.flags = static_cast<uint16_t>(h.flags & ~kPieceCrc);
    plain.crc = 0;
    std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> with_crc;
    EncodePieceFrame(FrameType::kData, plain, &with_crc);
    SetPieceCrc(h.crc, &with_crc);
    FUZZ_CHECK(with_crc == frame);
  }
}

}  // namespace
}  // namespace rs::protocol

// Input: one byte choosing the limits, then a header and a payload.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rs::protocol;
  rs::fuzz::Cursor in(data, size);
  const uint8_t limits = in.Byte();
  // Piece limits from 0 to 4 GiB and beyond, as a reducer might compute them.
  const uint64_t max_piece = (limits & 0x80) ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << (limits & 31)) - 1;
  const std::span<const uint8_t> header = in.Take(kHeaderBytes);
  CheckHeader(header, kPieceHeaderBytes + std::min<uint64_t>(max_piece, 1ull << 40));
  const std::span<const uint8_t> payload = in.Rest();
  CheckPayloads(payload);
  // The piece header: with the frame's own length when the header had one.
  const uint32_t declared = header.size() == kHeaderBytes ? GetLE<uint32_t>(header.data() + 8) : 0;
  CheckPieceHeader(payload, declared, max_piece);
  CheckPieceHeader(payload, static_cast<uint32_t>(std::min<size_t>(payload.size(), UINT32_MAX)), max_piece);
  return 0;
}
