// Writes the hand-made seeds of the wire and handshake fuzz targets: valid
// frames of the current protocol version, made by the real encoders, in each
// target's input layout (see wire_fuzz.cc and handshake_fuzz.cc). Run it
// after a change to the wire format, then minimise what the fuzzers find from
// them into the corpus (docs/engineering/testing.md, "Fuzzing"):
//
//   fuzz_make_seeds tests/fuzz/corpus
//
// Files are named "v<version>-<what>" and overwritten; nothing else in the
// corpus is touched.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "usage: %s CORPUS_DIR\n"
                 "Writes valid protocol-%u seeds into CORPUS_DIR/wire and CORPUS_DIR/handshake\n"
                 "(files v%u-*, overwritten; nothing else touched).\n",
                 argv[0], unsigned{kProtocolVersion}, unsigned{kProtocolVersion});
    return argc == 2 ? 0 : 2;
  }
  g_root = argv[1];
  WireSeeds();
  HandshakeSeeds();
  std::printf("wrote %d seeds under %s\n", g_written, g_root.c_str());
  return 0;
}
