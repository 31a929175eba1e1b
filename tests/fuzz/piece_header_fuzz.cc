// Fuzz target: piece headers validated against a session
// (protocol::DecodePieceHeader, then server::Session's BeginContribution /
// EndContribution), the path every DATA frame takes on the reducer. Ranks
// and streams send arbitrary headers in arbitrary order, contributions end
// in any order, streams leave, time passes. Properties: a contribution is
// only ever written inside its rank's slot; memory stays within the budget;
// a piece's result goes to every rank once, and only after all contributed;
// a failed session stays failed and answers every later call with its error.
#include <cstring>
#include <map>
#include <vector>

#include "protocol/auth.h"
#include "protocol/byte_io.h"
#include "server/core/session.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rs;
using namespace rs::server;

constexpr size_t kBudget = 1 << 20;

class Member : public SessionMember {
 public:
  void SendReady() override { ++ready; }
  void SendResult(std::shared_ptr<Piece> piece) override {
    results[{piece->header().seq, piece->header().piece}]++;
  }
  void SendErrorAndClose(const Status& status) override {
    FUZZ_CHECK(!status.ok());
    ++errors;
  }
  int ready = 0;
  int errors = 0;
  std::map<std::pair<uint64_t, uint32_t>, int> results;
};

struct Open {
  uint32_t rank;
  std::shared_ptr<Piece> piece;
};

}  // namespace

// Input: world (1-4), streams (1-2), max piece, how many streams join, then
// commands of one byte each followed by their arguments.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Cursor in(data, size);
  const uint32_t world = 1 + in.Byte() % 4;
  const uint16_t streams = static_cast<uint16_t>(1 + in.Byte() % 2);
  const uint64_t max_piece = uint64_t{64} << (in.Byte() % 12);  // 64 B to 128 KiB
  const uint32_t join = in.Byte() % (world * streams + 1);
  auto budget = MemoryBudget::Create(kBudget);
  SessionLimits limits{max_piece, std::chrono::seconds(5), std::chrono::seconds(10)};
  Clock::time_point now{};
  auto session = std::make_shared<Session>(protocol::SessionIdFromName("fuzz"), world, streams, budget, limits, now);
  std::vector<std::shared_ptr<Member>> members(world * streams);
  for (uint32_t i = 0; i < world * streams; ++i) {
    members[i] = std::make_shared<Member>();
    if (i >= join) continue;
    protocol::Hello hello;
    hello.session = session->id();
    hello.rank = i / streams;
    hello.world = world;
    hello.stream = static_cast<uint16_t>(i % streams);
    hello.streams = streams;
    FUZZ_CHECK(session->Join(hello, members[i]).ok());
  }
  FUZZ_CHECK(session->ready() == (join == world * streams));

  std::vector<Open> open;  // contributions begun, not yet ended
  for (int command = 0; command < 64 && !in.empty(); ++command) {
    const uint8_t op = in.Byte();
    const uint32_t rank = in.Byte() % world;
    const uint16_t stream = static_cast<uint16_t>(in.Byte() % streams);
    const auto& member = members[rank * streams + stream];
    switch (op % 5) {
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
        if (c.kind != Contribution::Kind::kReceive) break;
        FUZZ_CHECK(c.piece != nullptr && c.dest == c.piece->slot(rank));
        FUZZ_CHECK(c.piece->header().count == h.count && c.piece->header().dtype == h.dtype);
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
      case 3:  // a stream goes away, cleanly or not
        session->Leave(rank, stream, (op & 0x80) != 0, Status(Code::kIo, "fuzzer closed the stream"));
        break;
      case 4:  // time passes
        now += std::chrono::milliseconds(in.Byte() * 100);
        session->CheckTimeouts(now);
        break;
    }
    FUZZ_CHECK(budget->in_use() <= kBudget);
  }
  // Every result went to each rank's stream at most once per piece.
  for (const auto& m : members) {
    for (const auto& [key, count] : m->results) FUZZ_CHECK(count == 1);
    FUZZ_CHECK(m->ready <= 1);
  }
  open.clear();
  session->DropMembers();
  FUZZ_CHECK(budget->in_use() == 0);
  return 0;
}
