// The wire format: what a reducer and a worker from different builds rely on
// to understand each other, and to reject garbage with a clear message.
#include "protocol/wire.h"

#include <gtest/gtest.h>

#include "protocol/auth.h"
#include "tests/support/frame_payload.h"

namespace rs::protocol {
namespace {

FrameHeader Header(const std::vector<uint8_t>& frame) {
  FrameHeader h;
  EXPECT_TRUE(DecodeHeader(frame, 1 << 20, &h).ok());
  return h;
}

TEST(WireTest, HelloRoundTrip) {
  Hello in;
  in.session = protocol::SessionIdFromName("job-42");
  in.rank = 3;
  in.world = 8;
  in.stream = 1;
  in.streams = 2;
  in.client_nonce = *protocol::RandomNonce();
  in.flags = kHelloFailover;
  in.liveness_ms = 5000;
  const auto frame = EncodeHello(in);
  const FrameHeader h = Header(frame);
  EXPECT_EQ(h.type, FrameType::kHello);
  EXPECT_EQ(h.payload_bytes, frame.size() - kHeaderBytes);
  Hello out;
  ASSERT_TRUE(DecodeHello(Payload(frame), &out).ok());
  EXPECT_EQ(out.session, in.session);
  EXPECT_EQ(out.rank, 3u);
  EXPECT_EQ(out.world, 8u);
  EXPECT_EQ(out.stream, 1);
  EXPECT_EQ(out.streams, 2);
  EXPECT_EQ(out.client_nonce, in.client_nonce);
  EXPECT_EQ(out.flags, kHelloFailover);
  EXPECT_EQ(out.liveness_ms, 5000u);
  in.flags = 0x80000000u;  // a flag this version does not know
  EXPECT_EQ(DecodeHello(Payload(EncodeHello(in)), &out).code(), Code::kProtocol);
}

TEST(WireTest, HeartbeatRoundTrip) {
  const Heartbeat in{7, 1, 123456789012345ull};
  const auto frame = EncodeHeartbeat(in);
  EXPECT_EQ(Header(frame).type, FrameType::kHeartbeat);
  Heartbeat out;
  ASSERT_TRUE(DecodeHeartbeat(Payload(frame), &out).ok());
  EXPECT_EQ(out.epoch, 7u);
  EXPECT_EQ(out.flags, 1u);
  EXPECT_EQ(out.watermark, 123456789012345ull);
  EXPECT_EQ(DecodeHeartbeat(Payload(frame).first(15), &out).code(), Code::kProtocol);
}

TEST(WireTest, ControlFramesRoundTrip) {
  Challenge c{*protocol::RandomNonce(), true};
  Challenge c2;
  ASSERT_TRUE(DecodeChallenge(Payload(EncodeChallenge(c)), &c2).ok());
  EXPECT_EQ(c2.server_nonce, c.server_nonce);
  EXPECT_TRUE(c2.token_required);

  Welcome w;
  w.mac[0] = 7;
  w.max_piece_bytes = 1 << 22;
  Welcome w2;
  ASSERT_TRUE(DecodeWelcome(Payload(EncodeWelcome(w)), &w2).ok());
  EXPECT_EQ(w2.mac, w.mac);
  EXPECT_EQ(w2.max_piece_bytes, 1u << 22);

  ErrorFrame e{Code::kMismatch, "rank 3 sent bfloat16 for operation 17, rank 0 sent float32"};
  ErrorFrame e2;
  ASSERT_TRUE(DecodeError(Payload(EncodeError(e)), &e2).ok());
  EXPECT_EQ(e2.code, Code::kMismatch);
  EXPECT_EQ(e2.message, e.message);
}

TEST(WireTest, PieceHeaderRoundTrip) {
  PieceHeader in;
  in.seq = 1234567890123ull;
  in.piece = 5;
  in.pieces = 9;
  in.dtype = DataType::kBfloat16;
  in.op = ReduceOp::kMax;
  in.total_count = 1000003;
  in.offset = 500000;
  in.count = 4099;
  in.flags = kPieceCrc;
  in.crc = 0xE3069283u;
  in.epoch = 3;
  in.watermark = 987654321987ull;
  std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> frame;
  EncodePieceFrame(FrameType::kData, in, &frame);
  FrameHeader h;
  ASSERT_TRUE(DecodeHeader(frame, 1 << 20, &h).ok());
  EXPECT_EQ(h.type, FrameType::kData);
  EXPECT_EQ(h.payload_bytes, kPieceHeaderBytes + 4099 * 2);
  PieceHeader out;
  ASSERT_TRUE(DecodePieceHeader(std::span(frame).subspan(kHeaderBytes), h.payload_bytes, 1 << 20, &out).ok());
  EXPECT_EQ(out.seq, in.seq);
  EXPECT_EQ(out.piece, 5u);
  EXPECT_EQ(out.pieces, 9u);
  EXPECT_EQ(out.dtype, DataType::kBfloat16);
  EXPECT_EQ(out.op, ReduceOp::kMax);
  EXPECT_EQ(out.total_count, 1000003u);
  EXPECT_EQ(out.offset, 500000u);
  EXPECT_EQ(out.count, 4099u);
  EXPECT_EQ(out.flags, kPieceCrc);
  EXPECT_EQ(out.crc, 0xE3069283u);
  EXPECT_EQ(out.epoch, 3u);
  EXPECT_EQ(out.watermark, 987654321987ull);
  frame[kHeaderBytes + 19] = 0x80;  // a flag this version does not know
  const Status st = DecodePieceHeader(std::span(frame).subspan(kHeaderBytes), h.payload_bytes, 1 << 20, &out);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_EQ(st.message(), "unknown piece flags 0x8001");
}

// The piece header's bytes as protocol v3 lays them out (little-endian),
// written out here independently of the encoder: a change of layout fails
// this test, not only the round trip.
TEST(WireTest, PieceHeaderLayoutIsPinned) {
  PieceHeader in;
  in.seq = 0x0102030405060708ull;
  in.piece = 0x11121314u;
  in.pieces = 0x21222324u;
  in.dtype = DataType::kFloat16;
  in.op = ReduceOp::kMin;
  in.flags = kPieceWideSum;
  in.crc = 0x31323334u;
  in.total_count = 0x4142434445464748ull;
  in.offset = 0x0000000000000010ull;
  in.count = 0x0000000000000020ull;
  in.epoch = 0x51525354u;
  in.watermark = 0x6162636465666768ull;
  std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> frame;
  EncodePieceFrame(FrameType::kResult, in, &frame);
  const uint8_t* p = frame.data() + kHeaderBytes;
  const auto le = [p](size_t at, size_t bytes) {
    uint64_t v = 0;
    for (size_t i = bytes; i-- > 0;) v = (v << 8) | p[at + i];
    return v;
  };
  EXPECT_EQ(le(0, 8), in.seq);
  EXPECT_EQ(le(8, 4), in.piece);
  EXPECT_EQ(le(12, 4), in.pieces);
  EXPECT_EQ(p[16], static_cast<uint8_t>(DataType::kFloat16));
  EXPECT_EQ(p[17], static_cast<uint8_t>(ReduceOp::kMin));
  EXPECT_EQ(le(18, 2), kPieceWideSum);
  EXPECT_EQ(le(20, 4), in.crc);
  EXPECT_EQ(le(24, 8), in.total_count);
  EXPECT_EQ(le(32, 8), in.offset);
  EXPECT_EQ(le(40, 8), in.count);
  EXPECT_EQ(le(48, 4), in.epoch);
  EXPECT_EQ(le(52, 4), 0u);  // reserved
  EXPECT_EQ(le(56, 8), in.watermark);

  // SetPieceCrc patches the flags and the CRC in place, and nothing else.
  auto patched = frame;
  SetPieceCrc(0xA1A2A3A4u, &patched);
  const uint8_t* q = patched.data() + kHeaderBytes;
  EXPECT_EQ(q[18] | (q[19] << 8), kPieceWideSum | kPieceCrc);
  EXPECT_EQ(uint32_t{q[20]} | uint32_t{q[21]} << 8 | uint32_t{q[22]} << 16 | uint32_t{q[23]} << 24, 0xA1A2A3A4u);
  for (size_t i = 0; i < patched.size(); ++i) {
    if (i < kHeaderBytes + 18 || i >= kHeaderBytes + 24) {
      EXPECT_EQ(patched[i], frame[i]) << "byte " << i;
    }
  }
}

TEST(WireTest, RejectsTruncatedHeader) {
  const auto frame = EncodeReady();
  FrameHeader h;
  Status st = DecodeHeader(std::span(frame).first(kHeaderBytes - 1), 1 << 20, &h);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
}

TEST(WireTest, RejectsWrongMagic) {
  auto frame = EncodeReady();
  frame[0] = 'G';  // an HTTP client, say
  FrameHeader h;
  Status st = DecodeHeader(frame, 1 << 20, &h);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("bad magic"), std::string::npos) << st.message();
}

TEST(WireTest, RejectsOtherVersionWithBothVersionsNamed) {
  Hello hello;
  hello.world = 1;
  const auto frame = EncodeHello(hello, /*version=*/1);
  FrameHeader h;
  Status st = DecodeHeader(frame, 1 << 20, &h);
  EXPECT_EQ(st.code(), Code::kVersion);
  EXPECT_EQ(st.message(), "protocol version 1 not supported, this peer speaks 3");
  EXPECT_EQ(h.version, 1);
}

TEST(WireTest, RejectsOversizedFrames) {
  PieceHeader p;
  p.pieces = 1;
  p.count = (1 << 20) / 4 + 1;
  p.total_count = p.count;
  std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> frame;
  EncodePieceFrame(FrameType::kData, p, &frame);
  FrameHeader h;
  Status st = DecodeHeader(frame, kPieceHeaderBytes + (1 << 20), &h);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("exceeds the limit"), std::string::npos) << st.message();

  // A control frame may not claim a huge payload either.
  auto ready = EncodeReady();
  ready[8] = 0xff;
  ready[9] = 0xff;
  ready[10] = 0xff;
  EXPECT_EQ(DecodeHeader(ready, 1 << 20, &h).code(), Code::kProtocol);
}

TEST(WireTest, RejectsUnknownFrameType) {
  auto frame = EncodeReady();
  frame[6] = 99;
  FrameHeader h;
  Status st = DecodeHeader(frame, 1 << 20, &h);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("unknown frame type 99"), std::string::npos);
}

TEST(WireTest, RejectsMalformedPayloads) {
  Hello hello;
  hello.world = 4;
  hello.rank = 4;  // not below world
  auto frame = EncodeHello(hello);
  Hello out;
  Status st = DecodeHello(Payload(frame), &out);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("rank 4 is not below world size 4"), std::string::npos);

  frame.pop_back();
  EXPECT_EQ(DecodeHello(Payload(frame), &out).code(), Code::kProtocol);
}

TEST(WireTest, RejectsHellosThatWouldExhaustMemory) {
  Hello hello;
  hello.world = kMaxWorld + 1;
  Hello out;
  Status st = DecodeHello(Payload(EncodeHello(hello)), &out);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("outside 1 to 16384"), std::string::npos) << st.message();

  hello.world = kMaxWorld;
  hello.streams = 65535;
  hello.stream = 0;
  st = DecodeHello(Payload(EncodeHello(hello)), &out);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("at most 64"), std::string::npos) << st.message();

  hello.streams = kMaxStreams;
  EXPECT_TRUE(DecodeHello(Payload(EncodeHello(hello)), &out).ok());
}

TEST(WireTest, RejectsInconsistentPieceHeaders) {
  PieceHeader p;
  p.seq = 3;
  p.pieces = 2;
  p.piece = 1;
  p.total_count = 100;
  p.offset = 90;
  p.count = 20;  // runs past the end of the operation
  std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> frame;
  EncodePieceFrame(FrameType::kData, p, &frame);
  PieceHeader out;
  const uint32_t payload = kPieceHeaderBytes + 20 * 4;
  Status st = DecodePieceHeader(std::span(frame).subspan(kHeaderBytes), payload, 1 << 20, &out);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_NE(st.message().find("beyond the operation"), std::string::npos) << st.message();

  p.offset = 0;
  EncodePieceFrame(FrameType::kData, p, &frame);
  // Frame length disagrees with the element count.
  st = DecodePieceHeader(std::span(frame).subspan(kHeaderBytes), payload + 4, 1 << 20, &out);
  EXPECT_EQ(st.code(), Code::kProtocol);

  frame[kHeaderBytes + 16] = 42;  // unknown dtype
  st = DecodePieceHeader(std::span(frame).subspan(kHeaderBytes), payload, 1 << 20, &out);
  EXPECT_NE(st.message().find("unknown data type 42"), std::string::npos);
}

TEST(AuthTest, ProofsBindTokenSessionAndNonces) {
  Hello hello;
  hello.session = protocol::SessionIdFromName("a");
  hello.world = 2;
  hello.client_nonce = *protocol::RandomNonce();
  const Nonce server = *protocol::RandomNonce();
  const Mac mac = *protocol::ClientProof("secret", hello, server);
  EXPECT_TRUE(protocol::MacEqual(mac, *protocol::ClientProof("secret", hello, server)));
  EXPECT_FALSE(protocol::MacEqual(mac, *protocol::ClientProof("Secret", hello, server)));
  EXPECT_FALSE(protocol::MacEqual(mac, *protocol::ClientProof("secret", hello, *protocol::RandomNonce())));
  EXPECT_FALSE(protocol::MacEqual(mac, *protocol::ServerProof("secret", hello, server)));
  Hello other = hello;
  other.rank = 1;
  EXPECT_FALSE(protocol::MacEqual(mac, *protocol::ClientProof("secret", other, server)));
}

TEST(AuthTest, CryptoFailuresComeBackAsStatuses) {
  Hello hello;
  hello.world = 1;
  SetCryptoFaultForTesting(CryptoFault::kRandom);
  const auto nonce = RandomNonce();
  SetCryptoFaultForTesting(CryptoFault::kHmac);
  const auto client = ClientProof("secret", hello, Nonce{});
  const auto server = ServerProof("secret", hello, Nonce{});
  SetCryptoFaultForTesting(CryptoFault::kNone);
  ASSERT_FALSE(nonce.ok());
  EXPECT_EQ(nonce.status().code(), Code::kInternal);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Code::kInternal);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(RandomNonce().ok());
  EXPECT_TRUE(ClientProof("secret", hello, Nonce{}).ok());
}

}  // namespace
}  // namespace rs::protocol
