#include "protocol/membership.h"

#include <bit>

#include "protocol/byte_io.h"
#include "protocol/wire.h"

namespace rs::protocol {
namespace {

// kind u8, reserved u8, reducers u16, epoch u32, seq u64, then the bitmap.
constexpr size_t kFixedBytes = 16;

size_t BitmapBytes(uint32_t size) { return (size + 7) / 8; }

}  // namespace

ReducerSet::ReducerSet(uint32_t size, bool all) : size_(size), bits_(BitmapBytes(size), 0) {
  if (all) {
    for (uint32_t i = 0; i < size; ++i) Add(i);
  }
}

bool ReducerSet::Has(uint32_t index) const { return index < size_ && (bits_[index / 8] >> (index % 8)) & 1; }

void ReducerSet::Add(uint32_t index) {
  if (index < size_) bits_[index / 8] |= static_cast<uint8_t>(1u << (index % 8));
}

void ReducerSet::Remove(uint32_t index) {
  if (index < size_) bits_[index / 8] &= static_cast<uint8_t>(~(1u << (index % 8)));
}

uint32_t ReducerSet::Count() const {
  uint32_t n = 0;
  for (uint8_t b : bits_) n += static_cast<uint32_t>(std::popcount(b));
  return n;
}

std::vector<uint32_t> ReducerSet::Members() const {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < size_; ++i) {
    if (Has(i)) out.push_back(i);
  }
  return out;
}

ReducerSet ReducerSet::Intersect(const ReducerSet& other) const {
  ReducerSet out(size_);
  for (uint32_t i = 0; i < size_; ++i) {
    if (Has(i) && other.Has(i)) out.Add(i);
  }
  return out;
}

ReducerSet ReducerSet::Minus(const ReducerSet& other) const {
  ReducerSet out(size_);
  for (uint32_t i = 0; i < size_; ++i) {
    if (Has(i) && !other.Has(i)) out.Add(i);
  }
  return out;
}

ReducerSet ReducerSet::Union(const ReducerSet& other) const {
  ReducerSet out(size_);
  for (uint32_t i = 0; i < size_; ++i) {
    if (Has(i) || other.Has(i)) out.Add(i);
  }
  return out;
}

std::string ReducerSet::ToString() const {
  std::string out = "{";
  bool first = true;
  for (uint32_t i : Members()) {
    out += (first ? "" : ", ") + std::to_string(i);
    first = false;
  }
  return out + "}";
}

StatusOr<ReducerSet> ReducerSet::FromBits(uint32_t size, std::span<const uint8_t> bits) {
  if (size > kMaxReducers) {
    return Status(Code::kProtocol, "reducer set of " + std::to_string(size) + " reducers; at most " +
                                       std::to_string(kMaxReducers));
  }
  if (bits.size() != BitmapBytes(size)) {
    return Status(Code::kProtocol, "reducer set of " + std::to_string(size) + " reducers carries " +
                                       std::to_string(bits.size()) + " bitmap bytes");
  }
  ReducerSet out(size);
  for (uint32_t i = 0; i < size; ++i) {
    if ((bits[i / 8] >> (i % 8)) & 1) out.Add(i);
  }
  // Bits beyond `size` must be clear, so equal sets encode equally.
  for (uint32_t i = size; i < 8 * bits.size(); ++i) {
    if ((bits[i / 8] >> (i % 8)) & 1) return Status(Code::kProtocol, "reducer set names reducers beyond its size");
  }
  return out;
}

const char* MembershipKindName(MembershipKind kind) {
  switch (kind) {
    case MembershipKind::kReport: return "report";
    case MembershipKind::kPropose: return "propose";
    case MembershipKind::kInstall: return "install";
    case MembershipKind::kAnnounce: return "announce";
    case MembershipKind::kEvict: return "evict";
  }
  return "unknown";
}

std::vector<uint8_t> EncodeMembership(const MembershipFrame& frame) {
  const size_t payload = kFixedBytes + frame.live.bits().size();
  std::vector<uint8_t> out(kHeaderBytes + payload);
  EncodeHeader(FrameHeader{kProtocolVersion, FrameType::kMembership, static_cast<uint32_t>(payload)}, out.data());
  uint8_t* p = out.data() + kHeaderBytes;
  p[0] = static_cast<uint8_t>(frame.kind);
  p[1] = 0;
  PutLE<uint16_t>(p + 2, static_cast<uint16_t>(frame.live.size()));
  PutLE<uint32_t>(p + 4, frame.epoch);
  PutLE<uint64_t>(p + 8, frame.seq);
  std::copy(frame.live.bits().begin(), frame.live.bits().end(), p + kFixedBytes);
  return out;
}

Status DecodeMembership(std::span<const uint8_t> payload, MembershipFrame* out) {
  if (payload.size() < kFixedBytes) {
    return Status(Code::kProtocol, "MEMBERSHIP payload is " + std::to_string(payload.size()) +
                                       " bytes, shorter than its " + std::to_string(kFixedBytes) + "-byte head");
  }
  const uint8_t kind = payload[0];
  if (kind < static_cast<uint8_t>(MembershipKind::kReport) || kind > static_cast<uint8_t>(MembershipKind::kEvict)) {
    return Status(Code::kProtocol, "unknown MEMBERSHIP kind " + std::to_string(kind));
  }
  out->kind = static_cast<MembershipKind>(kind);
  const uint16_t reducers = GetLE<uint16_t>(payload.data() + 2);
  out->epoch = GetLE<uint32_t>(payload.data() + 4);
  out->seq = GetLE<uint64_t>(payload.data() + 8);
  StatusOr<ReducerSet> live = ReducerSet::FromBits(reducers, payload.subspan(kFixedBytes));
  if (!live.ok()) return live.status();
  out->live = std::move(live).value();
  return Status::Ok();
}

}  // namespace rs::protocol
