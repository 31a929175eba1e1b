// Reducer sets and MEMBERSHIP frames: what the ranks and the coordinating
// reducer exchange to agree on a new epoch.
#include "protocol/membership.h"

#include <gtest/gtest.h>

#include "protocol/wire.h"

namespace rs::protocol {
namespace {

TEST(ReducerSetTest, SetOperations) {
  ReducerSet all(10, true);
  EXPECT_EQ(all.Count(), 10u);
  ReducerSet some(10);
  some.Add(1);
  some.Add(9);
  some.Add(12);  // beyond the size: ignored
  EXPECT_EQ(some.Members(), (std::vector<uint32_t>{1, 9}));
  EXPECT_EQ(all.Minus(some).Count(), 8u);
  EXPECT_EQ(all.Intersect(some), some);
  EXPECT_EQ(some.Union(ReducerSet(10)), some);
  EXPECT_EQ(some.ToString(), "{1, 9}");
  some.Remove(1);
  EXPECT_FALSE(some.Has(1));
}

TEST(MembershipFrameTest, RoundTripsEveryKind) {
  for (auto kind : {MembershipKind::kReport, MembershipKind::kPropose, MembershipKind::kInstall,
                    MembershipKind::kAnnounce, MembershipKind::kEvict}) {
    MembershipFrame in;
    in.kind = kind;
    in.epoch = 7;
    in.seq = 123456789;
    in.live = ReducerSet(13, true);
    in.live.Remove(4);
    const auto bytes = EncodeMembership(in);
    FrameHeader h;
    ASSERT_TRUE(DecodeHeader(bytes, 0, &h).ok());
    EXPECT_EQ(h.type, FrameType::kMembership);
    MembershipFrame out;
    ASSERT_TRUE(DecodeMembership(std::span(bytes).subspan(kHeaderBytes), &out).ok());
    EXPECT_EQ(out.kind, kind);
    EXPECT_EQ(out.epoch, 7u);
    EXPECT_EQ(out.seq, 123456789u);
    EXPECT_EQ(out.live, in.live);
  }
}

TEST(MembershipFrameTest, RejectsMalformedFrames) {
  MembershipFrame in;
  in.live = ReducerSet(9, true);
  auto bytes = EncodeMembership(in);
  std::vector<uint8_t> payload(bytes.begin() + kHeaderBytes, bytes.end());
  MembershipFrame out;
  EXPECT_EQ(DecodeMembership(std::span(payload).first(10), &out).code(), Code::kProtocol);  // short
  auto bad_kind = payload;
  bad_kind[0] = 9;
  EXPECT_EQ(DecodeMembership(bad_kind, &out).code(), Code::kProtocol);
  auto extra_bits = payload;
  extra_bits.back() |= 0x80;  // reducer 15 of a set of 9
  EXPECT_EQ(DecodeMembership(extra_bits, &out).code(), Code::kProtocol);
  auto short_bitmap = payload;
  short_bitmap.pop_back();
  EXPECT_EQ(DecodeMembership(short_bitmap, &out).code(), Code::kProtocol);
}

}  // namespace
}  // namespace rs::protocol
