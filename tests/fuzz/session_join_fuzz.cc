// Fuzz target: joins that disagree with a session (server/core/session.*).
// A session opened by the first HELLO is fed further HELLOs whose rank,
// world size, streams, stream index, failover flag and wire type come from
// the input, a few at a time, as any holder of the token could send them.
// Properties: a join succeeds only for a free slot of a session not yet
// ready, with the session's settings; the session becomes ready exactly
// when every slot is taken; once ready, no join succeeds and none fails the
// session or sends its members anything; before it is ready, a join fails
// the session only when its settings disagree, and never for a taken slot
// or a rank outside it.
#include "protocol/auth.h"
#include "server/core/session.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace protocol = rs::protocol;
using rs::DataType;
using rs::Status;
using rs::server::Session;
using rs::server::SessionMember;

class CountingMember : public SessionMember {
 public:
  void SendReady() override { ++ready; }
  void SendResult(const rs::server::ResultPart&) override { ++frames; }
  void SendErrorAndClose(const Status&) override { ++errors; }
  void SendControl(std::vector<uint8_t>) override { ++frames; }
  void CloseQuietly() override { ++frames; }
  int ready = 0;
  int errors = 0;
  int frames = 0;
};

constexpr DataType kWires[] = {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16};

// A HELLO of at most 4 ranks x 3 streams (and indices up to 2 past them),
// so that slots are taken and sessions fill within a few joins.
protocol::Hello NextHello(rs::fuzz::Cursor& in, const protocol::SessionId& id) {
  protocol::Hello h;
  h.session = id;
  const uint8_t a = in.Byte();
  const uint8_t b = in.Byte();
  h.world = 1 + a % 4;
  h.streams = static_cast<uint16_t>(1 + (a >> 2) % 3);
  h.rank = (b % 6) % (h.world + 2);
  h.stream = static_cast<uint16_t>(((b >> 3) % 5) % (h.streams + 2));
  h.flags = (a & 0x40 ? protocol::kHelloFailover : 0u) | (a & 0x80 ? protocol::kHelloResultParts : 0u);
  h.wire = kWires[(b >> 6) % 3];
  return h;
}

bool Agrees(const protocol::Hello& h, const protocol::Hello& first) {
  return h.world == first.world && h.streams == first.streams && h.wire == first.wire &&
         ((h.flags ^ first.flags) & protocol::kHelloFailover) == 0;
}

}  // namespace

// Input: pairs of bytes, each a HELLO (NextHello); the first opens the session.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rs::fuzz::Cursor in(data, size);
  const protocol::SessionId id = protocol::SessionIdFromName("fuzz-join");
  protocol::Hello first = NextHello(in, id);
  first.rank %= first.world;
  first.stream = static_cast<uint16_t>(first.stream % first.streams);
  auto budget = rs::server::MemoryBudget::Create(1 << 20);
  Session session(id, first.world, first.streams, budget, {}, rs::Clock::now(), nullptr, first.flags, first.wire);

  std::vector<std::shared_ptr<CountingMember>> joined;
  std::vector<uint8_t> taken(size_t{first.world} * first.streams, 0);
  size_t taken_count = 0;
  protocol::Hello h = first;
  for (int joins = 0; joins < 64; ++joins) {
    if (joins > 0) {
      if (in.left() < 2) break;
      h = NextHello(in, id);
    }
    const bool was_ready = session.ready();
    const bool was_failed = !session.failure().ok();
    std::vector<int> frames_before;
    for (const auto& m : joined) frames_before.push_back(m->ready + m->errors + m->frames);
    auto member = std::make_shared<CountingMember>();
    const Status st = session.Join(h, member);

    const bool in_range = h.rank < first.world && h.stream < first.streams;
    const size_t slot = size_t{h.rank} * first.streams + h.stream;
    const bool free_slot = in_range && !taken[slot];
    FUZZ_CHECK(member->errors == 0);  // the joiner hears through its connection
    if (was_ready) {
      FUZZ_CHECK(!st.ok());
      FUZZ_CHECK(session.failure().ok() == !was_failed);
      for (size_t i = 0; i < joined.size(); ++i) {
        FUZZ_CHECK(joined[i]->ready + joined[i]->errors + joined[i]->frames == frames_before[i]);
      }
      continue;
    }
    if (was_failed) {
      FUZZ_CHECK(!st.ok());
      continue;
    }
    if (st.ok()) {
      FUZZ_CHECK(free_slot && Agrees(h, first));
      taken[slot] = 1;
      ++taken_count;
      joined.push_back(member);
      FUZZ_CHECK(session.ready() == (taken_count == taken.size()));
      if (session.ready()) {
        for (const auto& m : joined) FUZZ_CHECK(m->ready == 1);
      }
      continue;
    }
    // Refused: a taken slot alone leaves the session be; a disagreement
    // about a free slot fails it, telling every member.
    FUZZ_CHECK(!session.ready());
    if ((in_range && !free_slot) || (!in_range && Agrees(h, first))) {
      FUZZ_CHECK(session.failure().ok());
    } else {
      FUZZ_CHECK(!Agrees(h, first));
      FUZZ_CHECK(!session.failure().ok());
      for (const auto& m : joined) FUZZ_CHECK(m->errors == 1);
    }
  }
  session.DropMembers();
  return 0;
}
