// Protocol v3's wire type of float32 sums: the HELLO carries the session's
// setting, a piece says it belongs to such a sum and which type its elements
// came in, and anything else is refused before a byte of payload is read.
#include <gtest/gtest.h>

#include "protocol/auth.h"
#include "protocol/wire.h"
#include "tests/support/frame_payload.h"

namespace rs::protocol {
namespace {

TEST(WireTypeTest, HelloCarriesTheWireType) {
  Hello in;
  in.world = 4;
  in.rank = 2;
  for (DataType wire : {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16}) {
    in.wire = wire;
    Hello out;
    ASSERT_TRUE(DecodeHello(Payload(EncodeHello(in)), &out).ok());
    EXPECT_EQ(out.wire, wire);
  }
  auto frame = EncodeHello(in);
  frame[kHeaderBytes + kSessionIdBytes + 12 + kNonceBytes + 8] = 4;  // int64: not a wire type
  Hello out;
  const Status st = DecodeHello(Payload(frame), &out);
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_EQ(st.message(), "unknown wire type 4 in HELLO");
}

TEST(WireTypeTest, TheJobTokensProofCoversTheWireType) {
  Hello hello;
  hello.world = 2;
  const Nonce server = *RandomNonce();
  const Mac off = *ClientProof("secret", hello, server);
  hello.wire = DataType::kBfloat16;
  EXPECT_NE(*ClientProof("secret", hello, server), off) << "a changed wire type must not pass for the original";
  EXPECT_NE(*ServerProof("secret", hello, server), *ClientProof("secret", hello, server));
}

TEST(WireTypeTest, SettingNamesParseAndPrint) {
  EXPECT_EQ(ParseWireType("off"), DataType::kFloat32);
  EXPECT_EQ(ParseWireType("bfloat16"), DataType::kBfloat16);
  EXPECT_EQ(ParseWireType("bf16"), DataType::kBfloat16);
  EXPECT_EQ(ParseWireType("float16"), DataType::kFloat16);
  EXPECT_EQ(ParseWireType("fp16"), DataType::kFloat16);
  EXPECT_FALSE(ParseWireType("float32"));  // "off" says what it means
  EXPECT_FALSE(ParseWireType(""));
  EXPECT_FALSE(ParseWireType("int8"));
  for (DataType wire : {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16}) {
    EXPECT_EQ(ParseWireType(WireTypeName(wire)), wire);
  }
}

Status DecodeWide(DataType dtype, ReduceOp op) {
  PieceHeader p;
  p.pieces = 1;
  p.total_count = 100;
  p.count = 100;
  p.dtype = dtype;
  p.op = op;
  p.flags = kPieceWideSum | kPieceCrc;
  std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> frame;
  EncodePieceFrame(FrameType::kData, p, &frame);
  FrameHeader h;
  EXPECT_TRUE(DecodeHeader(frame, 1 << 20, &h).ok());
  PieceHeader out;
  Status st = DecodePieceHeader(std::span(frame).subspan(kHeaderBytes), h.payload_bytes, 1 << 20, &out);
  if (st.ok()) {
    EXPECT_EQ(out.flags, kPieceWideSum | kPieceCrc);
    EXPECT_EQ(out.dtype, dtype);
    // The frame carries the elements in the type they travel in.
    EXPECT_EQ(h.payload_bytes, kPieceHeaderBytes + 100 * DataTypeSize(dtype));
  }
  return st;
}

TEST(WireTypeTest, AWideSumPieceIsASumInTheWireTypeOrFloat32) {
  EXPECT_TRUE(DecodeWide(DataType::kBfloat16, ReduceOp::kSum).ok());
  EXPECT_TRUE(DecodeWide(DataType::kFloat16, ReduceOp::kSum).ok());
  EXPECT_TRUE(DecodeWide(DataType::kFloat32, ReduceOp::kSum).ok());  // a piece that fell back
  const Status max = DecodeWide(DataType::kBfloat16, ReduceOp::kMax);
  EXPECT_EQ(max.code(), Code::kProtocol);
  EXPECT_EQ(max.message(), "a piece of a float32 sum on a 16-bit wire carries bfloat16 max");
  EXPECT_EQ(DecodeWide(DataType::kInt32, ReduceOp::kSum).code(), Code::kProtocol);
  EXPECT_EQ(DecodeWide(DataType::kFloat64, ReduceOp::kSum).code(), Code::kProtocol);
}

TEST(WireTypeTest, AnOldPeerIsToldBothVersions) {
  Hello hello;
  hello.world = 1;
  FrameHeader h;
  const Status st = DecodeHeader(EncodeHello(hello, /*version=*/2), 1 << 20, &h, "this reducer");
  EXPECT_EQ(st.code(), Code::kVersion);
  EXPECT_EQ(st.message(), "protocol version 2 not supported, this reducer speaks 3");
}

}  // namespace
}  // namespace rs::protocol
