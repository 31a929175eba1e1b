// Fuzz target: piece headers validated against a session
// (protocol::DecodePieceHeader, then server::Session's BeginContribution /
// EndContribution), the path every DATA frame takes on the reducer. Ranks
// and streams send arbitrary headers in arbitrary order, contributions end
// in any order, streams leave, time passes; with failover, ranks also send
// membership frames (reports, announcements, evictions, and the kinds only
// reducers send) and heartbeats, so epochs change under open contributions.
// Properties: a contribution is only ever written inside its rank's slot;
// memory stays within the budget; a piece's result goes to every rank once
// per epoch, only after all contributed, and only in the epoch it was sent
// in; a piece of an older epoch is discarded, never mixed; the epoch never
// goes back; an eviction closes quietly, with no error sent; a failed session
// stays failed and answers every later call with its error. Sessions may
// carry float32 sums on a 16-bit wire (bfloat16, float16): such a piece's
// result comes from its two result slots, in the wire type or float32.
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "protocol/auth.h"
#include "protocol/byte_io.h"
#include "protocol/membership.h"
#include "server/core/session.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rs;
using namespace rs::server;

constexpr size_t kBudget = 1 << 20;

class Member : public SessionMember {
 public:
  explicit Member(const Session* session) : session_(session) {}
  void SendReady() override { ++ready; }
  void SendResult(const ResultPart& part) override {
    const protocol::PieceHeader& h = part.header;
    const protocol::PieceHeader& whole = part.piece->header();
    FUZZ_CHECK(h.epoch == session_->epoch());  // reduced in the epoch it was sent in
    // Parts in order, each where the last ended, inside the piece, from the
    // reduced slot; the result counts once, when its last part is out.
    uint64_t& next = next_[{h.epoch, h.seq, h.piece}];
    if (next == 0) next = whole.offset;
    FUZZ_CHECK(h.seq == whole.seq && h.piece == whole.piece && h.count > 0);
    FUZZ_CHECK(h.offset == next && h.offset + h.count <= whole.offset + whole.count);
    if (part.piece->wide_sum()) {
      // Summed in float32 past the ranks' slots, rounded there to the wire
      // type when every element fits, else sent as float32.
      FUZZ_CHECK(h.dtype == DataType::kFloat32 || h.dtype == session_->wire());
      const uint8_t* results = part.piece->slot(session_->world());
      const uint8_t* end = part.piece->slot(session_->world() + 2);
      FUZZ_CHECK(part.data >= results && part.data + h.count * DataTypeSize(h.dtype) <= end);
    } else {
      FUZZ_CHECK(part.data == part.piece->slot(0) + (h.offset - whole.offset) * DataTypeSize(h.dtype));
    }
    next = h.offset + h.count;
    if (next == whole.offset + whole.count) results[{h.epoch, h.seq, h.piece}]++;
  }
  void SendErrorAndClose(const Status& status) override {
    FUZZ_CHECK(!status.ok());
    ++errors;
  }
  void SendControl(std::vector<uint8_t>) override { ++control; }
  void CloseQuietly() override {}
  int ready = 0;
  int control = 0;
  int errors = 0;
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, int> results;  // (epoch, seq, piece)

 private:
  const Session* session_;
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, uint64_t> next_;  // next part's first element
};

struct Open {
  uint32_t rank;
  std::shared_ptr<Piece> piece;
};

}  // namespace

// Input: world (1-4 in the byte's low bits; its top bit: failover, the next:
// results in parts, bits 2-5: the smallest part), streams (1-2, bit 0) and
// wire type of float32 sums (off, bfloat16, float16: bits 1-2), max piece,
// how many streams join, then commands of one byte each followed by their
// arguments.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Cursor in(data, size);
  const uint8_t first = in.Byte();
  const uint32_t world = 1 + first % 4;
  const uint32_t flags = ((first & 0x80) != 0 ? static_cast<uint32_t>(protocol::kHelloFailover) : 0u) |
                         ((first & 0x40) != 0 ? static_cast<uint32_t>(protocol::kHelloResultParts) : 0u);
  const uint8_t second = in.Byte();
  const uint16_t streams = static_cast<uint16_t>(1 + second % 2);
  constexpr DataType kWires[] = {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16};
  const DataType wire = kWires[(second >> 1) % 3];
  const uint64_t max_piece = uint64_t{64} << (in.Byte() % 12);  // 64 B to 128 KiB
  const uint64_t part_bytes = ((first >> 2) & 0xf) * 4u;        // 0 (whole pieces) to 60 B
  const uint32_t join = in.Byte() % (world * streams + 1);
  auto budget = MemoryBudget::Create(kBudget);
  // whole_pieces_from 0: parts for every operation that fits them.
  SessionLimits limits{max_piece, std::chrono::seconds(5), std::chrono::seconds(10), true, part_bytes, 0};
  Clock::time_point now{};
  auto session = std::make_shared<Session>(protocol::SessionIdFromName("fuzz"), world, streams, budget, limits, now,
                                           nullptr, flags, wire);
  std::vector<std::shared_ptr<Member>> members(world * streams);
  for (uint32_t i = 0; i < world * streams; ++i) {
    members[i] = std::make_shared<Member>(session.get());
    if (i >= join) continue;
    protocol::Hello hello;
    hello.session = session->id();
    hello.rank = i / streams;
    hello.world = world;
    hello.stream = static_cast<uint16_t>(i % streams);
    hello.streams = streams;
    hello.flags = flags;
    hello.wire = wire;
    FUZZ_CHECK(session->Join(hello, members[i]).ok());
  }
  FUZZ_CHECK(session->ready() == (join == world * streams));

  std::vector<Open> open;  // contributions begun, not yet ended
  for (int command = 0; command < 64 && !in.empty(); ++command) {
    const uint8_t op = in.Byte();
    const uint32_t rank = in.Byte() % world;
    const uint16_t stream = static_cast<uint16_t>(in.Byte() % streams);
    const auto& member = members[rank * streams + stream];
    const uint32_t epoch_before = session->epoch();
    switch (op % 8) {
      case 0:
      case 1: {  // a DATA frame's piece header from (rank, stream)
        const auto bytes = in.Take(protocol::kPieceHeaderBytes);
        if (bytes.size() < protocol::kPieceHeaderBytes) break;
        // The frame's length: consistent with the header (op 0), or the fuzzer's own.
        uint32_t payload_bytes = in.U32();
        if (op % 5 == 0) {
          const auto dtype = DataTypeFromWire(bytes[16]);
          const uint64_t count = protocol::GetLE<uint64_t>(bytes.data() + 40);
          if (dtype && count < (1u << 28)) {
            payload_bytes = static_cast<uint32_t>(protocol::kPieceHeaderBytes + count * DataTypeSize(*dtype));
          }
        }
        protocol::PieceHeader h;
        if (!protocol::DecodePieceHeader(bytes, payload_bytes, max_piece, &h).ok()) break;
        const Status before = session->failure();
        Contribution c = session->BeginContribution(rank, member, stream, h, {}, now);
        if (!before.ok()) FUZZ_CHECK(c.kind == Contribution::Kind::kFailed);
        // Sent before the rank learned of the current epoch: discarded, never mixed in.
        if (before.ok() && session->ready() && h.epoch < epoch_before) {
          FUZZ_CHECK(c.kind == Contribution::Kind::kDiscard);
        }
        if (c.kind != Contribution::Kind::kReceive) break;
        FUZZ_CHECK(h.epoch == session->epoch());
        FUZZ_CHECK(c.piece != nullptr && c.dest == c.piece->slot(rank));
        FUZZ_CHECK(c.piece->header().count == h.count);
        if (c.piece->wide_sum()) {  // each rank's piece in the wire type, or float32 where a value did not fit
          FUZZ_CHECK(h.dtype == DataType::kFloat32 || h.dtype == wire);
        } else {
          FUZZ_CHECK(c.piece->header().dtype == h.dtype);
        }
        // The slot holds the contribution, and ends where the next rank's begins.
        const size_t bytes_in = h.PayloadBytes();
        FUZZ_CHECK(bytes_in <= max_piece);
        if (rank + 1 < world) FUZZ_CHECK(c.piece->slot(rank) + bytes_in <= c.piece->slot(rank + 1));
        std::memset(c.dest, static_cast<int>(op), bytes_in);
        open.push_back({rank, std::move(c.piece)});
        break;
      }
      case 2: {  // a begun contribution has been read
        if (open.empty()) break;
        const size_t i = in.Byte() % open.size();
        Open o = std::move(open[i]);
        open.erase(open.begin() + static_cast<ptrdiff_t>(i));
        session->EndContribution(o.rank, o.piece, now);
        break;
      }
      case 7: {  // part of a begun contribution has been read
        if (open.empty()) break;
        const Open& o = open[in.Byte() % open.size()];
        const uint64_t bytes = in.U32() % (o.piece->header().PayloadBytes() + 1);
        session->ContributionProgress(o.rank, o.piece, bytes);
        break;
      }
      case 3: {  // a stream goes away: after BYE, closed between operations, or lost
        constexpr server::Departure kHow[] = {server::Departure::kGoodbye, server::Departure::kClosed,
                                              server::Departure::kLost, server::Departure::kLost};
        session->Leave(rank, stream, kHow[(op >> 6) & 3], Status(Code::kIo, "fuzzer closed the stream"));
        break;
      }
      case 4:  // time passes
        now += std::chrono::milliseconds(in.Byte() * 100);
        session->CheckTimeouts(now);
        break;
      case 5: {  // a MEMBERSHIP frame from the rank: any kind, a small epoch, set and first operation
        protocol::MembershipFrame f;
        f.kind = static_cast<protocol::MembershipKind>(1 + in.Byte() % 5);
        f.epoch = in.Byte() % 4;
        f.seq = in.Byte();
        const uint8_t bits[1] = {in.Byte()};
        auto live = protocol::ReducerSet::FromBits(1 + bits[0] % 4, bits);
        if (!live.ok()) break;
        f.live = *live;
        int errors_before = 0;
        for (const auto& m : members) errors_before += m->errors;
        session->OnMembership(rank, f);
        const bool failover = (flags & protocol::kHelloFailover) != 0;
        if (f.kind == protocol::MembershipKind::kEvict && failover && !session->failure().ok()) {
          // Evicted: the ranks go on without this reducer; it must not send them an error.
          int errors_after = 0;
          for (const auto& m : members) errors_after += m->errors;
          FUZZ_CHECK(errors_after == errors_before);
        }
        break;
      }
      case 6: {  // a heartbeat from the rank
        protocol::Heartbeat hb;
        hb.epoch = in.Byte() % 4;
        hb.flags = in.Byte() % 2;
        hb.watermark = in.Byte();
        session->OnHeartbeat(rank, hb);
        break;
      }
    }
    FUZZ_CHECK(session->epoch() >= epoch_before);  // the epoch never goes back
    FUZZ_CHECK(budget->in_use() <= kBudget);
  }
  // Every result went to each rank's stream at most once per piece and epoch.
  for (const auto& m : members) {
    for (const auto& [key, count] : m->results) FUZZ_CHECK(count == 1);
    FUZZ_CHECK(m->ready <= 1);
  }
  open.clear();
  session->DropMembers();
  FUZZ_CHECK(budget->in_use() == 0);
  return 0;
}
