// Writes the hand-made seeds of the wire, handshake, connection and control
// fuzz targets: valid frames of the current protocol version, made by the
// real encoders, in each target's input layout (see the targets' files). Run it
// after a change to the wire format, then minimise what the fuzzers find from
// them into the corpus (docs/engineering/testing.md, "Fuzzing"):
//
//   fuzz_make_seeds tests/fuzz/corpus
//
// Files are named "v<version>-<what>" and overwritten; nothing else in the
// corpus is touched.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "protocol/auth.h"
#include "protocol/membership.h"
#include "protocol/wire.h"

namespace {

using namespace rs::protocol;
using Bytes = std::vector<uint8_t>;

std::filesystem::path g_root;
int g_written = 0;

void Write(const std::string& target, const std::string& what, const Bytes& bytes) {
  const auto dir = g_root / target;
  std::filesystem::create_directories(dir);
  const auto path = dir / ("v" + std::to_string(kProtocolVersion) + "-" + what);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  ++g_written;
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Hello MakeHello(bool failover, rs::DataType wire = rs::DataType::kFloat32) {
  Hello hello;
  hello.session = SessionIdFromName("fuzz-seed");
  hello.rank = 1;
  hello.world = 4;
  hello.stream = 0;
  hello.streams = 2;
  hello.client_nonce.fill(0x11);
  hello.flags = failover ? uint32_t{kHelloFailover} : 0u;
  hello.liveness_ms = 5000;
  hello.wire = wire;
  return hello;
}

PieceHeader MakePiece(uint32_t epoch, uint64_t watermark, bool crc) {
  PieceHeader h;
  h.seq = 7;
  h.piece = 1;
  h.pieces = 3;
  h.dtype = rs::DataType::kFloat32;
  h.total_count = 12;
  h.offset = 4;
  h.count = 4;
  h.epoch = epoch;
  h.watermark = watermark;
  if (crc) {
    h.flags = kPieceCrc;
    h.crc = 0x1c2d3e4f;
  }
  return h;
}

Bytes PieceFrame(FrameType type, const PieceHeader& h) {
  std::array<uint8_t, kHeaderBytes + kPieceHeaderBytes> head;
  EncodePieceFrame(type, h, &head);
  Bytes out(head.begin(), head.end());
  out.resize(out.size() + h.PayloadBytes(), 0x3f);  // the elements
  return out;
}

MembershipFrame Membership(MembershipKind kind, uint32_t epoch, uint64_t seq, uint32_t reducers,
                           std::initializer_list<uint32_t> live) {
  MembershipFrame f;
  f.kind = kind;
  f.epoch = epoch;
  f.seq = seq;
  f.live = ReducerSet(reducers);
  for (uint32_t r : live) f.live.Add(r);
  return f;
}

// wire_fuzz: a limits byte (20: pieces up to 1 MiB - 1), then one frame.
void WireSeeds() {
  const Bytes limits{20};
  auto frame = [&](const std::string& what, const Bytes& f) { Write("wire", what, Cat({limits, f})); };
  frame("hello", EncodeHello(MakeHello(false)));
  frame("hello-failover", EncodeHello(MakeHello(true)));
  frame("hello-wire-bfloat16", EncodeHello(MakeHello(true, rs::DataType::kBfloat16)));
  frame("hello-wire-float16", EncodeHello(MakeHello(false, rs::DataType::kFloat16)));
  Challenge challenge;
  challenge.server_nonce.fill(0x22);
  challenge.token_required = true;
  frame("challenge", EncodeChallenge(challenge));
  Auth auth;
  auth.mac.fill(0x33);
  frame("auth", EncodeAuth(auth));
  Welcome welcome;
  welcome.mac.fill(0x44);
  welcome.max_piece_bytes = 1 << 20;
  frame("welcome", EncodeWelcome(welcome));
  frame("ready", EncodeReady());
  frame("bye", EncodeBye());
  frame("error", EncodeError({rs::Code::kPeerFailed, "rank 3 disconnected from the reducer"}));
  Heartbeat hb;
  hb.epoch = 2;
  hb.flags = kHeartbeatWantWatermark;
  hb.watermark = 41;
  frame("heartbeat", EncodeHeartbeat(hb));
  frame("heartbeat-zero", EncodeHeartbeat({}));
  frame("membership-report", EncodeMembership(Membership(MembershipKind::kReport, 1, 40, 3, {0, 2})));
  frame("membership-propose", EncodeMembership(Membership(MembershipKind::kPropose, 1, 0, 3, {0, 2})));
  frame("membership-install", EncodeMembership(Membership(MembershipKind::kInstall, 1, 38, 3, {0, 2})));
  frame("membership-announce", EncodeMembership(Membership(MembershipKind::kAnnounce, 1, 38, 3, {0, 2})));
  frame("membership-evict", EncodeMembership(Membership(MembershipKind::kEvict, 2, 0, 3, {})));
  frame("membership-wide", EncodeMembership(Membership(MembershipKind::kInstall, 5, 9, 70, {0, 8, 63, 69})));
  frame("data", PieceFrame(FrameType::kData, MakePiece(0, 0, false)));
  frame("data-epoch-crc", PieceFrame(FrameType::kData, MakePiece(3, 6, true)));
  frame("result-epoch-crc", PieceFrame(FrameType::kResult, MakePiece(3, 5, true)));
  // Float32 sums on a 16-bit wire: a piece in the wire type, one that fell
  // back to float32, and a result part in the wire type.
  PieceHeader wide = MakePiece(0, 0, true);
  wide.flags |= kPieceWideSum;
  wide.dtype = rs::DataType::kBfloat16;
  frame("data-wide-bfloat16", PieceFrame(FrameType::kData, wide));
  wide.dtype = rs::DataType::kFloat32;
  frame("data-wide-fallback", PieceFrame(FrameType::kData, wide));
  wide.dtype = rs::DataType::kFloat16;
  frame("result-wide-float16", PieceFrame(FrameType::kResult, wide));
}

// handshake_fuzz: a flags byte (bit 0 token, bit 1 forge the proof, bit 2
// refuse the join), a session-size byte (10: 1024 streams), then the stream.
void HandshakeSeeds() {
  auto stream = [&](const std::string& what, uint8_t flags, std::initializer_list<Bytes> frames) {
    Bytes head{flags, 10};
    Write("handshake", what, Cat({head, Cat(frames)}));
  };
  const Bytes auth = EncodeAuth({});
  stream("join", 0, {EncodeHello(MakeHello(false)), auth});
  stream("join-failover", 0, {EncodeHello(MakeHello(true)), auth});
  stream("join-wire-bfloat16", 0, {EncodeHello(MakeHello(true, rs::DataType::kBfloat16)), auth});
  stream("join-token", 3, {EncodeHello(MakeHello(true)), auth});
  stream("join-token-wrong-proof", 1, {EncodeHello(MakeHello(false)), auth});
  stream("join-refused", 4, {EncodeHello(MakeHello(true)), auth});
  stream("hello-old-version", 0, {EncodeHello(MakeHello(false), kProtocolVersion - 1), auth});
  stream("heartbeat-before-hello", 0, {EncodeHeartbeat({}), EncodeHello(MakeHello(false)), auth});
  stream("heartbeat-instead-of-auth", 0, {EncodeHello(MakeHello(true)), EncodeHeartbeat({})});
  stream("membership-instead-of-auth", 0,
         {EncodeHello(MakeHello(true)), EncodeMembership(Membership(MembershipKind::kAnnounce, 1, 0, 2, {1}))});
}

// connection_fuzz: a setup byte (bit 0 token, bits 1-2 ranks joined by the
// target, bit 3 CRC, bit 4 result parts, bits 5-6 wire type, bit 7
// failover), an options byte (bit 0 take parts, bit 1 forge AUTH, bit 2 the
// larger memory limit, bit 3 liveness 100 ms), then commands on stream `conn`.
namespace conn {

Bytes Raw(uint8_t conn, const Bytes& bytes) {
  Bytes out;
  for (size_t at = 0; at < bytes.size(); at += 255) {
    const size_t n = std::min<size_t>(255, bytes.size() - at);
    out.push_back(conn);
    out.push_back(static_cast<uint8_t>(n));
    out.insert(out.end(), bytes.begin() + static_cast<ptrdiff_t>(at), bytes.begin() + static_cast<ptrdiff_t>(at + n));
  }
  return out;
}

// A frame under a valid header: its type and payload (a whole encoded frame
// passes its payload).
Bytes Frame(uint8_t conn, const Bytes& whole_frame) {
  const Bytes payload(whole_frame.begin() + kHeaderBytes, whole_frame.end());
  Bytes out{static_cast<uint8_t>(conn | 1 << 2), whole_frame[6], static_cast<uint8_t>(payload.size())};
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// A DATA frame the target builds: seq, pieces - 1, piece, dtype (0 float32,
// 1 bfloat16, 2 float16, 3 int32, 4 float64, 5 uint8), flags (bit 0 CRC,
// bit 1 wide sum, bit 2 spoil the CRC, bits 6-7 op), count, epoch,
// watermark, then how many of the elements' bytes follow.
Bytes Data(uint8_t conn, uint8_t seq, uint8_t piece, uint8_t pieces, uint8_t dtype, uint8_t flags, uint16_t count,
           uint8_t epoch = 0) {
  return {static_cast<uint8_t>(conn | 2 << 2), seq, static_cast<uint8_t>(pieces - 1), piece, dtype, flags,
          static_cast<uint8_t>(count & 0xff), static_cast<uint8_t>(count >> 8), epoch, 0, 4, 0, 0, 0x80, 0x3f};
}

Bytes HalfClose(uint8_t conn) { return {static_cast<uint8_t>(conn | 3 << 2)}; }

Hello WorldOfOne() {
  Hello hello;
  hello.session = SessionIdFromName("fuzz-seed");
  hello.world = 1;
  hello.client_nonce.fill(0x11);
  return hello;
}

}  // namespace conn

void ConnectionSeeds() {
  using namespace conn;
  auto seed = [](const std::string& what, uint8_t setup, uint8_t options, std::initializer_list<Bytes> commands) {
    Write("connection", what, Cat({Bytes{setup, options}, Cat(commands)}));
  };
  constexpr uint8_t kToken = 1, kOne = 1 << 1, kTwo = 2 << 1, kThree = 3 << 1, kCrc = 8, kParts = 16;
  constexpr uint8_t kBf16 = 1 << 5, kFailover = 0x80;
  const Bytes bye = EncodeBye();
  seed("raw-handshake-data-bye", 0, 0,
       {Raw(0, EncodeHello(WorldOfOne())), Raw(0, EncodeAuth({})), Data(0, 0, 0, 1, 0, 0, 16), Frame(0, bye)});
  seed("raw-hello-old-version", 0, 0, {Raw(0, EncodeHello(WorldOfOne(), kProtocolVersion - 1))});
  seed("raw-token-wrong-proof", kToken, 0, {Raw(0, EncodeHello(WorldOfOne())), Raw(0, EncodeAuth({}))});
  seed("one-data-bye", kOne, 0, {Data(0, 0, 0, 1, 0, 0, 16), Data(0, 1, 1, 2, 0, 0, 300), Frame(0, bye)});
  seed("one-token-crc-parts", kToken | kOne | kCrc | kParts, 1,
       {Data(0, 0, 0, 1, 0, 1, 1000), Data(0, 1, 0, 1, 1, 1, 700), Frame(0, bye)});
  seed("one-bad-crc", kOne | kCrc, 0, {Data(0, 0, 0, 1, 0, 5, 64)});
  seed("two-reduce", kTwo, 0,
       {Data(0, 0, 0, 1, 0, 0, 64), Data(1, 0, 0, 1, 0, 0, 64), Frame(0, bye), Frame(1, bye)});
  seed("two-mismatch", kTwo, 0, {Data(0, 0, 0, 1, 0, 0, 64), Data(1, 0, 0, 1, 3, 0, 64)});
  seed("three-wide-bfloat16-parts", kThree | kBf16 | kParts | kCrc, 1,
       {Data(0, 0, 0, 1, 1, 3, 512), Data(1, 0, 0, 1, 0, 3, 512), Data(2, 0, 0, 1, 1, 3, 512), Frame(0, bye),
        Frame(1, bye), Frame(2, bye)});
  Heartbeat hb;
  hb.flags = kHeartbeatWantWatermark;
  seed("two-failover-heartbeat-membership", kTwo | kFailover, 0,
       {Frame(0, EncodeHeartbeat(hb)), Data(0, 0, 0, 1, 0, 0, 32), Data(1, 0, 0, 1, 0, 0, 32),
        Frame(0, EncodeMembership(Membership(MembershipKind::kReport, 1, 1, 2, {0}))),
        Frame(1, EncodeMembership(Membership(MembershipKind::kAnnounce, 1, 1, 2, {0}))),
        Frame(0, EncodeMembership(Membership(MembershipKind::kEvict, 2, 0, 2, {})))});
  seed("one-worker-error", kOne, 0, {Frame(0, EncodeError({rs::Code::kPeerFailed, "rank 0 gave up"}))});
  // Rank 0's text goes on to rank 1, escaped: \xff is no UTF-8.
  seed("two-worker-error-not-utf8", kTwo, 0,
       {Frame(0, EncodeError({rs::Code::kPeerFailed, "CUDA error \xff\n"})), Data(1, 0, 0, 1, 0, 0, 8)});
  seed("one-result-from-worker", kOne, 0, {Frame(0, PieceFrame(FrameType::kResult, MakePiece(0, 0, false)))});
  seed("two-closed-between-operations", kTwo, 0,
       {Data(0, 0, 0, 1, 0, 0, 8), Data(1, 0, 0, 1, 0, 0, 8), HalfClose(1), Data(0, 1, 0, 1, 0, 0, 8)});
  // Rank 0 runs ahead while rank 1 sends nothing: the memory limit (128 KiB,
  // two granules) is used up, the stream waits, the operation times out.
  seed("two-memory-wait", kTwo, 0,
       {Data(0, 0, 0, 1, 0, 0, 8), Data(0, 1, 0, 1, 0, 0, 8), Data(0, 2, 0, 1, 0, 0, 8), Data(0, 3, 0, 1, 0, 0, 8)});
  seed("two-token-forged", kToken | kTwo, 2, {Data(0, 0, 0, 1, 0, 0, 8)});
  // The same with liveness on: rank 1's silence is named before the operation times out.
  seed("two-memory-wait-liveness", kTwo, 8,
       {Data(0, 0, 0, 1, 0, 0, 8), Data(0, 1, 0, 1, 0, 0, 8), Data(0, 2, 0, 1, 0, 0, 8), Data(0, 3, 0, 1, 0, 0, 8)});
}

// control_fuzz: a byte saying which settings follow (bit i: the i-th of
// REDUCER_DRAIN_TIMEOUT, _GRPC_LISTEN, _METRICS_LISTEN, _METRICS_MAX_SESSIONS,
// _METRICS_MAX_RANKS, _METRICS_SESSION_IDS), each as a length and its text,
// then commands (see control_fuzz.cc).
namespace control {

Bytes Settings(std::initializer_list<std::pair<int, std::string>> given) {
  Bytes out{0};
  for (const auto& [bit, text] : given) {
    out[0] |= static_cast<uint8_t>(1 << bit);
    out.push_back(static_cast<uint8_t>(text.size()));
    out.insert(out.end(), text.begin(), text.end());
  }
  return out;
}

// A handler call with the request's bytes: 0 GetStatus, 1 ListSessions,
// 2 GetSession, 3 Drain. `metrics`: check the metrics after it.
Bytes Call(uint8_t handler, const Bytes& request = {}, bool metrics = false) {
  Bytes out{static_cast<uint8_t>(handler | (metrics ? 0xc0 : 0)), static_cast<uint8_t>(request.size())};
  out.insert(out.end(), request.begin(), request.end());
  return out;
}

// GetSessionRequest{id}: field 1, length-delimited.
Bytes GetSessionRequest(const std::string& id) {
  Bytes out{0x0a, static_cast<uint8_t>(id.size())};
  out.insert(out.end(), id.begin(), id.end());
  return out;
}

Bytes GetKnownSession(uint8_t session, bool upper) { return {static_cast<uint8_t>(2 | 8 | (upper ? 16 : 0)), session}; }
Bytes JoinRank(uint8_t session, uint8_t world, uint8_t rank) {
  return {4, session, static_cast<uint8_t>(world - 1), rank};
}
Bytes LeaveRank(uint8_t session, uint8_t rank, uint8_t how) {
  return {static_cast<uint8_t>(5 | how << 3), session, rank};
}
Bytes Abort(uint8_t session, const std::string& text) {
  Bytes out{6, session, static_cast<uint8_t>(text.size())};
  out.insert(out.end(), text.begin(), text.end());
  return out;
}
Bytes Operation(uint8_t session, uint8_t order) { return {7, session, order}; }

}  // namespace control

void ControlSeeds() {
  using namespace control;
  auto seed = [](const std::string& what, const Bytes& settings, std::initializer_list<Bytes> commands) {
    Write("control", what, Cat({settings, Cat(commands)}));
  };
  seed("status-sessions-drain", Settings({{0, "45s"}}),
       {Call(0), JoinRank(0, 2, 0), JoinRank(0, 2, 1), Operation(0, 1), Operation(0, 0), Call(1, {}, true),
        GetKnownSession(0, false), Call(3), Call(3), JoinRank(1, 1, 0), Call(0, {}, true)});
  seed("failed-and-ended-sessions", Settings({{4, "1"}, {5, "1"}}),
       {JoinRank(0, 3, 0), JoinRank(1, 1, 0), Operation(1, 0), Abort(0, std::string("bad \xff\x01 bytes\n", 13)),
        LeaveRank(1, 0, 0), Call(1, {}, true), GetKnownSession(0, true), GetKnownSession(1, false),
        LeaveRank(0, 0, 2)});
  seed("malformed-session-ids", Settings({}),
       {Call(2, GetSessionRequest("not-hex")), Call(2, GetSessionRequest("00112233445566778899AABBCCDDEEFF")),
        Call(2, GetSessionRequest(std::string(32, 'g')))});
  seed("settings-all", Settings({{0, "forever"}, {1, "127.0.0.1:0"}, {2, "[::1]:9100"}, {3, "2"}, {4, "3"}, {5, "0"}}),
       {JoinRank(0, 1, 0), JoinRank(1, 1, 0), JoinRank(2, 1, 0), Call(3, {}, true)});
  seed("settings-bad-drain-timeout", Settings({{0, "90000"}}), {Call(0)});
  seed("settings-bad-listen", Settings({{1, "host:99999"}}), {Call(0)});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "usage: %s CORPUS_DIR\n"
                 "Writes valid protocol-%u seeds into CORPUS_DIR/{wire,handshake,connection,control}\n"
                 "(files v%u-*, overwritten; nothing else touched).\n",
                 argv[0], unsigned{kProtocolVersion}, unsigned{kProtocolVersion});
    return argc == 2 ? 0 : 2;
  }
  g_root = argv[1];
  WireSeeds();
  HandshakeSeeds();
  ConnectionSeeds();
  ControlSeeds();
  std::printf("wrote %d seeds under %s\n", g_written, g_root.c_str());
  return 0;
}
