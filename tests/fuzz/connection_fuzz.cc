// Fuzz target: the reducer's per-connection frame dispatch
// (server/net/connection.*), driven for real: an in-process ReducerServer on
// 127.0.0.1:0 with a small memory limit, and workers played by this target
// over loopback TCP. The fuzzed bytes choose what the workers send; the
// target does the part a fuzzer cannot guess (the HMAC proof in AUTH, the
// CRC32C of a DATA frame's elements), so inputs get past authentication and
// into the session.
//
// Properties: the reducer never crashes or trips a sanitizer; every frame it
// sends decodes, is one a reducer sends, and nothing follows an ERROR, whose
// text is UTF-8 (a rank's own text is passed on to the others); a
// WELCOME carries the reducer's valid proof and a piece size that fits the
// memory limit; once the workers stop sending, the reducer closes every
// stream within a bound (nothing hangs); piece memory never exceeds the
// limit; once every stream is closed the reducer holds no connection,
// handshake, session or piece memory.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <chrono>
#include <iterator>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "protocol/auth.h"
#include "protocol/crc32c.h"
#include "protocol/membership.h"
#include "protocol/wire.h"
#include "server/net/reducer_server.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rs;
namespace protocol = rs::protocol;
using Bytes = std::vector<uint8_t>;

constexpr char kToken[] = "connection-fuzz-token";
// Every wait of the target is bounded by this: a reducer that keeps a stream
// open longer after its worker stopped sending has hung.
constexpr auto kPatience = std::chrono::seconds(5);

// One worker stream: a non-blocking loopback socket, and what it received.
struct Peer {
  int fd = -1;
  Bytes in;
  bool eof = false;      // the reducer closed (or reset) the stream
  bool broken = false;   // a send failed: the reducer is gone
  protocol::Hello hello;

  ~Peer() {
    if (fd < 0) return;
    // A reset, not a FIN: no TIME_WAIT left behind per input.
    linger abort{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
    close(fd);
  }
  void ReadAvailable() {
    uint8_t buf[65536];
    while (!eof) {
      const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        in.insert(in.end(), buf, buf + n);
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        eof = true;
      } else {
        return;
      }
    }
  }
};

using Peers = std::vector<std::unique_ptr<Peer>>;

// Waits up to `deadline` for any peer to become readable (reading what came),
// or `out` to become writable. False once the deadline passed.
bool Wait(Peers& peers, Peer* out, Clock::time_point deadline) {
  std::vector<pollfd> fds;
  for (auto& p : peers) {
    short events = p->eof ? 0 : POLLIN;
    if (p.get() == out) events |= POLLOUT;
    fds.push_back({p->fd, events, 0});
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return false;
  poll(fds.data(), fds.size(), static_cast<int>(left));
  for (auto& p : peers) p->ReadAvailable();
  return true;
}

// Sends all of `bytes` (reading whatever comes meanwhile), unless the
// reducer has gone. The reducer may stop reading while it waits for memory;
// its operation timeout must end that wait well within kPatience.
void Send(Peers& peers, Peer& to, std::span<const uint8_t> bytes) {
  const auto deadline = Clock::now() + kPatience;
  while (!bytes.empty() && !to.broken) {
    const ssize_t n = send(to.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes = bytes.subspan(static_cast<size_t>(n));
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      to.broken = true;
    } else {
      FUZZ_CHECK(Wait(peers, &to, deadline));  // the reducer stopped reading for good
    }
  }
}

// The next whole frame of `p` at `*pos`, waiting for it; nullopt when the
// stream ends first.
std::optional<protocol::FrameHeader> NextFrame(Peers& peers, Peer& p, size_t* pos, Bytes* payload) {
  const auto deadline = Clock::now() + kPatience;
  for (;;) {
    protocol::FrameHeader h;
    if (p.in.size() >= *pos + protocol::kHeaderBytes) {
      FUZZ_CHECK(protocol::DecodeHeader(std::span(p.in).subspan(*pos), uint64_t{1} << 31, &h).ok());
      if (p.in.size() >= *pos + protocol::kHeaderBytes + h.payload_bytes) {
        const auto body = p.in.begin() + static_cast<ptrdiff_t>(*pos + protocol::kHeaderBytes);
        payload->assign(body, body + h.payload_bytes);
        *pos += protocol::kHeaderBytes + h.payload_bytes;
        return h;
      }
    }
    if (p.eof) return std::nullopt;
    FUZZ_CHECK(Wait(peers, nullptr, deadline));  // the reducer neither answered nor closed
  }
}

// Connects, sends a HELLO for `rank` of `world`, the AUTH (the valid proof
// unless `forge`), and checks the CHALLENGE and WELCOME that come back.
// False when the reducer refused the stream (its ERROR says why).
bool Join(Peers& peers, Peer& p, const server::ReducerServer& server, bool token, bool forge) {
  size_t pos = 0;
  Bytes payload;
  Send(peers, p, protocol::EncodeHello(p.hello));
  auto h = NextFrame(peers, p, &pos, &payload);
  if (!h || h->type != protocol::FrameType::kChallenge) return false;
  protocol::Challenge challenge;
  FUZZ_CHECK(protocol::DecodeChallenge(payload, &challenge).ok());
  FUZZ_CHECK(challenge.token_required == token);
  protocol::Auth auth;
  if (token && !forge) auth.mac = *protocol::ClientProof(kToken, p.hello, challenge.server_nonce);
  Send(peers, p, protocol::EncodeAuth(auth));
  h = NextFrame(peers, p, &pos, &payload);
  if (!h || h->type != protocol::FrameType::kWelcome) return false;
  FUZZ_CHECK(!token || !forge);  // a wrong proof never joins
  protocol::Welcome welcome;
  FUZZ_CHECK(protocol::DecodeWelcome(payload, &welcome).ok());
  if (token) {
    FUZZ_CHECK(protocol::MacEqual(welcome.mac, *protocol::ServerProof(kToken, p.hello, challenge.server_nonce)));
  }
  FUZZ_CHECK(welcome.max_piece_bytes == server.MaxPieceBytes(p.hello.world, p.hello.wire));
  FUZZ_CHECK(welcome.max_piece_bytes > 0 && welcome.max_piece_bytes <= server.config().max_piece_bytes);
  return true;
}

// Whether `text` is UTF-8 (an oracle of its own: no overlong forms,
// surrogates or code points beyond U+10FFFF).
bool IsUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t n = lead < 0x80 ? 1 : lead >= 0xc2 && lead < 0xe0 ? 2 : lead >= 0xe0 && lead < 0xf0 ? 3
                     : lead >= 0xf0 && lead < 0xf5 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    uint32_t cp = n == 1 ? lead : lead & (0x7f >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) {
      return false;
    }
    i += n;
  }
  return true;
}

// Every frame the reducer sent on one stream decodes, is one a reducer sends,
// and none follows an ERROR. The last one may be cut short by a close.
void CheckSent(const Bytes& in) {
  size_t pos = 0;
  bool error_seen = false;
  while (in.size() >= pos + protocol::kHeaderBytes) {
    protocol::FrameHeader h;
    FUZZ_CHECK(protocol::DecodeHeader(std::span(in).subspan(pos), uint64_t{1} << 31, &h).ok());
    if (in.size() < pos + protocol::kHeaderBytes + h.payload_bytes) break;
    const auto payload = std::span(in).subspan(pos + protocol::kHeaderBytes, h.payload_bytes);
    FUZZ_CHECK(!error_seen);
    using protocol::FrameType;
    switch (h.type) {
      case FrameType::kChallenge: {
        protocol::Challenge c;
        FUZZ_CHECK(protocol::DecodeChallenge(payload, &c).ok());
        break;
      }
      case FrameType::kWelcome: {
        protocol::Welcome w;
        FUZZ_CHECK(protocol::DecodeWelcome(payload, &w).ok());
        break;
      }
      case FrameType::kReady:
        FUZZ_CHECK(payload.empty());
        break;
      case FrameType::kResult: {
        protocol::PieceHeader piece;
        FUZZ_CHECK(payload.size() >= protocol::kPieceHeaderBytes);
        FUZZ_CHECK(protocol::DecodePieceHeader(payload.first(protocol::kPieceHeaderBytes), h.payload_bytes,
                                               uint64_t{1} << 31, &piece).ok());
        if (piece.flags & protocol::kPieceCrc) {
          FUZZ_CHECK(protocol::Crc32c(payload.data() + protocol::kPieceHeaderBytes, piece.PayloadBytes()) ==
                     piece.crc);
        }
        break;
      }
      case FrameType::kHeartbeat: {
        protocol::Heartbeat hb;
        FUZZ_CHECK(protocol::DecodeHeartbeat(payload, &hb).ok());
        break;
      }
      case FrameType::kMembership: {
        protocol::MembershipFrame m;
        FUZZ_CHECK(protocol::DecodeMembership(payload, &m).ok());
        break;
      }
      case FrameType::kError: {
        protocol::ErrorFrame e;
        FUZZ_CHECK(protocol::DecodeError(payload, &e).ok());
        FUZZ_CHECK(e.code != Code::kOk && !e.message.empty());
        FUZZ_CHECK(IsUtf8(e.message));  // it reaches the other ranks' exceptions and logs
        error_seen = true;
        break;
      }
      default:
        FUZZ_CHECK(false);  // HELLO, AUTH, DATA and BYE come from workers only
    }
    pos += protocol::kHeaderBytes + h.payload_bytes;
  }
}

// A DATA frame from a compact description: the target fills in consistent
// offsets and sizes, the elements (the input's, then a pattern) and their
// CRC32C, so the fuzzer spends its time on what the session checks.
Bytes DataFrame(fuzz::Cursor& in) {
  constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16,
                                 DataType::kInt32,   DataType::kFloat64,  DataType::kUint8};
  protocol::PieceHeader h;
  h.seq = in.Byte() % 8;
  h.pieces = 1 + in.Byte() % 4;
  h.piece = in.Byte() % h.pieces;
  h.dtype = kTypes[in.Byte() % std::size(kTypes)];
  const uint8_t flags = in.Byte();
  h.op = static_cast<ReduceOp>(flags >> 6);
  h.flags = (flags & 2) != 0 ? uint16_t{protocol::kPieceWideSum} : uint16_t{0};
  h.count = in.Byte() | static_cast<uint64_t>(in.Byte() & 7) << 8;  // up to 2047 elements
  h.offset = h.piece * h.count;
  h.total_count = h.pieces * h.count;
  h.epoch = in.Byte() % 3;
  h.watermark = in.Byte() % 8;
  std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head;
  protocol::EncodePieceFrame(protocol::FrameType::kData, h, &head);
  Bytes out(head.size() + h.PayloadBytes(), 0x3c);
  uint8_t* elements = out.data() + head.size();
  const auto given = in.Take(std::min<size_t>(in.Byte(), h.PayloadBytes()));
  std::copy(given.begin(), given.end(), elements);
  if ((flags & 1) != 0) {  // with a CRC; bit 2 spoils it
    protocol::SetPieceCrc(protocol::Crc32c(elements, h.PayloadBytes()) ^ ((flags & 4) != 0 ? 1u : 0u), &head);
  }
  std::copy(head.begin(), head.end(), out.begin());
  return out;
}

// Waits until the reducer holds nothing of the input's streams any more.
bool Idle(const server::ReducerServer& server) {
  const auto deadline = Clock::now() + kPatience;
  for (;;) {
    const server::ServerStats s = server.stats();
    if (s.connections_active == 0 && s.admission.handshakes == 0 && s.admission.pending_sessions == 0 &&
        s.sessions_active == 0 && s.memory_in_use == 0) {
      return true;
    }
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// connect() on a blocking socket, which libFuzzer's SIGALRM (its -timeout
// clock) can interrupt: the connection then completes on its own, and EINTR
// only means "not yet" (seen once in 1,770 runs).
bool ConnectLoopback(int fd, const sockaddr_in& addr) {
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return true;
  if (errno != EINTR && errno != EINPROGRESS) return false;
  pollfd p{fd, POLLOUT, 0};
  int ready = 0;
  do {
    ready = poll(&p, 1, 5000);
  } while (ready < 0 && errno == EINTR);
  int err = 0;
  socklen_t len = sizeof(err);
  return ready == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

}  // namespace

// Input: a setup byte (bit 0: the reducer has a job token; bits 1-2: how
// many ranks the target joins, each over its own stream, 0 for none: then
// stream 0 is opened and everything on it is the fuzzer's, HELLO included;
// bit 3: check CRCs; bit 4: results in parts; bits 5-6: wire type of float32
// sums; bit 7: failover), an options byte (bit 0: the ranks take results in
// parts; bit 1: forge the AUTH proofs; bit 2: a 1 MiB memory limit instead
// of 128 KiB; bit 3: a liveness timeout of 100 ms, so that the reducer
// heartbeats and names a silent rank within an input), then commands: a byte whose low two bits pick the stream and
// next two the kind (raw bytes, a frame of a given type, a DATA frame,
// half-close the stream), then the command's arguments.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  fuzz::Cursor in(data, size);
  const uint8_t setup = in.Byte();
  const uint8_t options = in.Byte();
  const bool token = (setup & 1) != 0;
  const uint32_t ranks = (setup >> 1) & 3;
  constexpr DataType kWires[] = {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16, DataType::kFloat32};

  server::ServerConfig config;
  config.listen_host = "127.0.0.1";
  config.io_threads = 1;
  config.memory_limit = (options & 4) != 0 ? size_t{1} << 20 : size_t{128} << 10;
  config.max_piece_bytes = 64 << 10;
  if (token) config.job_token = kToken;
  // Short enough that an input which leaves a stream waiting (for memory, for
  // a rank that never comes) ends soon, long enough for the ranks to join.
  config.op_timeout = std::chrono::milliseconds(300);
  config.join_timeout = std::chrono::milliseconds(300);
  config.handshake_timeout = std::chrono::milliseconds(1000);
  config.crc = (setup & 8) != 0;
  config.result_part_bytes = (setup & 16) != 0 ? 256 : 0;
  config.tcp.congestion = "system";
  auto server = server::ReducerServer::Create(config);
  FUZZ_CHECK(server.ok());

  Peers peers;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((*server)->port());
  for (uint32_t i = 0; i < std::max<uint32_t>(ranks, 1); ++i) {
    auto p = std::make_unique<Peer>();
    p->fd = socket(AF_INET, SOCK_STREAM, 0);
    FUZZ_CHECK(p->fd >= 0);
    FUZZ_CHECK(ConnectLoopback(p->fd, addr));
    const int one = 1;  // as the client library: each command's bytes go out at once
    setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    protocol::Hello& hello = p->hello;
    hello.session = protocol::SessionIdFromName("connection-fuzz");
    hello.rank = i;
    hello.world = ranks;
    hello.client_nonce.fill(static_cast<uint8_t>(0x40 + i));
    hello.flags = ((setup & 0x80) != 0 ? uint32_t{protocol::kHelloFailover} : 0u) |
                  ((options & 1) != 0 ? uint32_t{protocol::kHelloResultParts} : 0u);
    hello.wire = kWires[(setup >> 5) & 3];
    hello.liveness_ms = (options & 8) != 0 ? 100 : 0;
    peers.push_back(std::move(p));
  }
  // The ranks join one after another; a refused one stays open for the
  // fuzzer's bytes all the same.
  for (uint32_t i = 0; i < ranks; ++i) (void)Join(peers, *peers[i], **server, token, (options & 2) != 0);

  for (int command = 0; command < 256 && !in.empty(); ++command) {
    const uint8_t op = in.Byte();
    Peer& p = *peers[(op & 3) % peers.size()];
    switch ((op >> 2) & 3) {
      case 0:  // raw bytes
        Send(peers, p, in.Take(in.Byte()));
        break;
      case 1: {  // a frame of the fuzzer's type with its payload, under a valid header
        const auto type = static_cast<protocol::FrameType>(in.Byte() % 13);
        const auto body = in.Take(in.Byte());
        Bytes frame(protocol::kHeaderBytes);
        protocol::EncodeHeader({protocol::kProtocolVersion, type, static_cast<uint32_t>(body.size())}, frame.data());
        frame.insert(frame.end(), body.begin(), body.end());
        Send(peers, p, frame);
        break;
      }
      case 2:
        Send(peers, p, DataFrame(in));
        break;
      case 3:  // the worker stops sending on this stream
        shutdown(p.fd, SHUT_WR);
        break;
    }
  }

  // The workers stop sending: the reducer must close every stream.
  for (auto& p : peers) shutdown(p->fd, SHUT_WR);
  const auto deadline = Clock::now() + kPatience;
  for (auto& p : peers) {
    while (!p->eof) FUZZ_CHECK(Wait(peers, nullptr, deadline));
    CheckSent(p->in);
  }
  FUZZ_CHECK(Idle(**server));
  FUZZ_CHECK((*server)->stats().memory_peak <= config.memory_limit);
  return 0;
}
