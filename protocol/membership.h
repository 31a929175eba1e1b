// The membership part of the protocol, for sessions with failover: which
// reducers are live in which epoch, and the MEMBERSHIP frames through which
// the ranks agree on a new epoch when a reducer is lost or comes back
// (docs/reliability.md has the whole protocol):
//
//   report   worker -> coordinator  "for epoch t I propose these live reducers;
//                                   every operation below `seq` has completed here"
//   propose  coordinator -> ranks   "for epoch t the proposal is now this set: report again"
//   install  coordinator -> ranks   "epoch t: this set, operations from `seq` on"
//   announce worker -> reducers     "I have installed epoch t" (same fields as install)
//   evict    worker -> reducer      "the ranks go on without you: leave quietly"
//
// Reducers are named by their index in the list every rank was given.
// Encoding and decoding only; no I/O. Thread-compatible value types.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace rs::protocol {

// A frame's live set may name at most this many reducers.
inline constexpr uint32_t kMaxReducers = 4096;

// A set of reducer indices below size().
class ReducerSet {
 public:
  ReducerSet() = default;
  // Empty, or holding every index when `all`.
  explicit ReducerSet(uint32_t size, bool all = false);

  uint32_t size() const { return size_; }
  bool Has(uint32_t index) const;
  void Add(uint32_t index);
  void Remove(uint32_t index);
  uint32_t Count() const;
  bool Empty() const { return Count() == 0; }
  std::vector<uint32_t> Members() const;  // ascending
  ReducerSet Intersect(const ReducerSet& other) const;
  ReducerSet Minus(const ReducerSet& other) const;
  ReducerSet Union(const ReducerSet& other) const;
  bool operator==(const ReducerSet& other) const = default;
  std::string ToString() const;  // "{0, 2, 3}"

  const std::vector<uint8_t>& bits() const { return bits_; }
  static StatusOr<ReducerSet> FromBits(uint32_t size, std::span<const uint8_t> bits);

 private:
  uint32_t size_ = 0;
  std::vector<uint8_t> bits_;  // bit i of byte i / 8
};

enum class MembershipKind : uint8_t {
  kReport = 1,
  kPropose = 2,
  kInstall = 3,
  kAnnounce = 4,
  kEvict = 5,
};
const char* MembershipKindName(MembershipKind kind);

struct MembershipFrame {
  MembershipKind kind = MembershipKind::kReport;
  uint32_t epoch = 0;  // the epoch proposed, installed or announced
  uint64_t seq = 0;    // report: the sender's watermark; install/announce: the epoch's first operation
  ReducerSet live;     // report/propose: the proposed set; install/announce: the epoch's set
};

std::vector<uint8_t> EncodeMembership(const MembershipFrame& frame);  // a whole frame
Status DecodeMembership(std::span<const uint8_t> payload, MembershipFrame* out);

}  // namespace rs::protocol
