// One worker stream on the reducer (server/net/connection.*), as a worker
// sees it: a real Connection, made by a ReducerServer on 127.0.0.1 the way
// reducerd makes them, and its session, with the test playing the worker
// frame by frame over a plain socket. The handshake proves the job token
// both ways and a DATA piece is answered by its RESULT; a malformed frame,
// a wrong token or a worker that vanishes mid-piece each get an ERROR that
// names the cause, and the reducer lets go of the stream and its memory and
// serves on; the close after an ERROR lets the worker read it, then the end
// of the stream, without a reset, also while the worker is still sending.
// FramedSocket's own tests (tests/common/framed_socket_test.cc) cover how
// the drain and the linger work; these check that a Connection uses them.
#include "server/net/connection.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/framed_socket.h"
#include "protocol/auth.h"
#include "protocol/crc32c.h"
#include "server/net/reducer_server.h"

namespace rs::server {
namespace {

using std::chrono::milliseconds;
using Bytes = std::vector<uint8_t>;

constexpr char kToken[] = "connection-test-token";
// Every wait of these tests ends within this: the reducer answers at once.
constexpr milliseconds kPatience{10000};

std::unique_ptr<ReducerServer> StartServer(const std::string& token) {
  ServerConfig config;
  config.listen_host = "127.0.0.1";
  config.job_token = token;
  auto server = ReducerServer::Create(config);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

// True once `done` holds, false if it does not within kPatience. Polls:
// what it waits for (a stream closing, memory coming back) happens on the
// reducer's threads and is seen only through its counters.
bool WaitFor(const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + kPatience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

// What the worker got from the reducer next.
struct Received {
  enum class Kind { kFrame, kEnd, kReset, kNothing };
  Kind kind = Kind::kNothing;
  protocol::FrameHeader header;
  Bytes payload;

  bool Is(protocol::FrameType type) const { return kind == Kind::kFrame && header.type == type; }
  protocol::ErrorFrame Error() const {
    protocol::ErrorFrame err;
    EXPECT_TRUE(Is(protocol::FrameType::kError)) << "got frame type " << static_cast<int>(header.type);
    if (Is(protocol::FrameType::kError)) {
      EXPECT_TRUE(protocol::DecodeError(payload, &err).ok());
    }
    return err;
  }
};

// A worker stream over a plain socket: sends the bytes it is given and reads
// frames, every call bounded by kPatience.
class Worker {
 public:
  explicit Worker(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Close();
  }
  ~Worker() { Close(); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Closes as a process that ends does: FIN, no reset (nothing unread).
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void ShutdownWrites() { ::shutdown(fd_, SHUT_WR); }

  // False if the stream failed (reset, closed) or stalled for kPatience.
  bool Send(std::span<const uint8_t> bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      if (!Wait(POLLOUT)) return false;
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  Received Read() {
    Received r;
    std::array<uint8_t, protocol::kHeaderBytes> head;
    r.kind = ReadExactly(head.data(), head.size());
    if (r.kind != Received::Kind::kFrame) return r;
    EXPECT_TRUE(protocol::DecodeHeader(head, UINT64_MAX, &r.header).ok());
    r.payload.resize(r.header.payload_bytes);
    const Received::Kind rest = ReadExactly(r.payload.data(), r.payload.size());
    if (rest != Received::Kind::kFrame) r.kind = rest;
    return r;
  }

  // HELLO, then AUTH with the proof made with `token`: what answered it.
  // `*challenge` is the reducer's CHALLENGE.
  Received Handshake(const protocol::Hello& hello, const std::string& token, protocol::Challenge* challenge) {
    if (!Send(protocol::EncodeHello(hello))) return {};
    Received r = Read();
    if (!r.Is(protocol::FrameType::kChallenge)) return r;
    EXPECT_TRUE(protocol::DecodeChallenge(r.payload, challenge).ok());
    protocol::Auth auth;
    if (!token.empty()) {
      auto proof = protocol::ClientProof(token, hello, challenge->server_nonce);
      EXPECT_TRUE(proof.ok()) << proof.status().ToString();
      if (proof.ok()) auth.mac = *proof;
    }
    if (!Send(protocol::EncodeAuth(auth))) return {};
    return Read();
  }

 private:
  bool Wait(short events) {
    pollfd p{fd_, events, 0};
    return fd_ >= 0 && ::poll(&p, 1, static_cast<int>(kPatience.count())) == 1;
  }
  Received::Kind ReadExactly(uint8_t* out, size_t bytes) {
    size_t done = 0;
    while (done < bytes) {
      if (!Wait(POLLIN)) return Received::Kind::kNothing;
      const ssize_t n = ::recv(fd_, out + done, bytes - done, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n == 0) return Received::Kind::kEnd;
      if (n < 0) return errno == ECONNRESET ? Received::Kind::kReset : Received::Kind::kNothing;
      done += static_cast<size_t>(n);
    }
    return Received::Kind::kFrame;
  }

  int fd_ = -1;
};

protocol::Hello HelloFor(const std::string& session, uint32_t rank, uint32_t world) {
  protocol::Hello hello;
  hello.session = protocol::SessionIdFromName(session);
  hello.rank = rank;
  hello.world = world;
  hello.client_nonce.fill(static_cast<uint8_t>(rank + 1));
  return hello;
}

// Joins `worker` as `hello` with the job token: WELCOME, and READY when
// `ready` (the last rank of the session to join gets it at once).
void Join(Worker& worker, const protocol::Hello& hello, bool ready = true) {
  protocol::Challenge challenge;
  const Received welcome = worker.Handshake(hello, kToken, &challenge);
  ASSERT_TRUE(welcome.Is(protocol::FrameType::kWelcome)) << "got kind " << static_cast<int>(welcome.kind);
  if (ready) {
    ASSERT_TRUE(worker.Read().Is(protocol::FrameType::kReady));
  }
}

// A DATA frame of one float32 sum piece of operation `seq`, with its CRC32C.
Bytes DataFrame(uint64_t seq, const std::vector<float>& values) {
  protocol::PieceHeader p;
  p.seq = seq;
  p.pieces = 1;
  p.total_count = values.size();
  p.count = values.size();
  std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head;
  protocol::EncodePieceFrame(protocol::FrameType::kData, p, &head);
  protocol::SetPieceCrc(protocol::Crc32c(values.data(), values.size() * sizeof(float)), &head);
  Bytes frame(head.size() + values.size() * sizeof(float));
  std::memcpy(frame.data(), head.data(), head.size());
  std::memcpy(frame.data() + head.size(), values.data(), values.size() * sizeof(float));
  return frame;
}

// A frame header no reduction server peer writes.
Bytes BadMagicFrame() {
  Bytes frame = protocol::EncodeHeartbeat({});
  frame[0] ^= 0xff;
  return frame;
}

TEST(ConnectionTest, TheHandshakeProvesTheTokenBothWaysAndAPieceIsAnsweredByItsResult) {
  auto server = StartServer(kToken);
  ASSERT_NE(server, nullptr);
  constexpr uint32_t kWorld = 2;
  constexpr size_t kCount = 1000;
  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t r = 0; r < kWorld; ++r) {
    workers.push_back(std::make_unique<Worker>(server->port()));
    const protocol::Hello hello = HelloFor("handshake-and-result", r, kWorld);
    protocol::Challenge challenge;
    const Received welcome = workers[r]->Handshake(hello, kToken, &challenge);
    EXPECT_TRUE(challenge.token_required);
    ASSERT_TRUE(welcome.Is(protocol::FrameType::kWelcome)) << "rank " << r;
    protocol::Welcome w;
    ASSERT_TRUE(protocol::DecodeWelcome(welcome.payload, &w).ok());
    // The reducer knows the token too: the worker can tell it from an impostor.
    auto proof = protocol::ServerProof(kToken, hello, challenge.server_nonce);
    ASSERT_TRUE(proof.ok());
    EXPECT_TRUE(protocol::MacEqual(w.mac, *proof)) << "rank " << r;
    EXPECT_EQ(w.max_piece_bytes, server->MaxPieceBytes(kWorld, DataType::kFloat32));
  }
  // READY once both ranks are in, not before.
  for (auto& w : workers) ASSERT_TRUE(w->Read().Is(protocol::FrameType::kReady));

  std::vector<std::vector<float>> values(kWorld, std::vector<float>(kCount));
  for (uint32_t r = 0; r < kWorld; ++r) {
    for (size_t i = 0; i < kCount; ++i) values[r][i] = static_cast<float>(i) + 0.5f * static_cast<float>(r);
    ASSERT_TRUE(workers[r]->Send(DataFrame(7, values[r])));
  }
  for (uint32_t r = 0; r < kWorld; ++r) {
    const Received result = workers[r]->Read();
    ASSERT_TRUE(result.Is(protocol::FrameType::kResult)) << "rank " << r << " got kind "
                                                         << static_cast<int>(result.kind);
    protocol::PieceHeader p;
    ASSERT_TRUE(protocol::DecodePieceHeader(result.payload, result.header.payload_bytes, UINT64_MAX, &p).ok());
    EXPECT_EQ(p.seq, 7u);
    EXPECT_EQ(p.offset, 0u);
    ASSERT_EQ(p.count, kCount);
    std::vector<float> sum(kCount);
    std::memcpy(sum.data(), result.payload.data() + protocol::kPieceHeaderBytes, kCount * sizeof(float));
    // The ranks' CRC32C asked for one on the result.
    EXPECT_NE(p.flags & protocol::kPieceCrc, 0);
    EXPECT_EQ(p.crc, protocol::Crc32c(sum.data(), kCount * sizeof(float)));
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(sum[i], values[0][i] + values[1][i]) << "element " << i;
  }

  // BYE ends each stream cleanly: the reducer closes it, and the session ends well.
  for (auto& w : workers) {
    ASSERT_TRUE(w->Send(protocol::EncodeBye()));
    EXPECT_EQ(w->Read().kind, Received::Kind::kEnd);
  }
  EXPECT_TRUE(WaitFor([&] { return server->stats().connections_active == 0; }));
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.sessions_active, 0u);
  EXPECT_EQ(stats.sessions_failed, 0u);
  EXPECT_EQ(stats.totals.pieces_completed, 1u);
  EXPECT_EQ(stats.memory_in_use, 0u);
}

// A worker sending a broken frame is told what was wrong, its stream closes,
// and the reducer takes the next job as if nothing happened.
TEST(ConnectionTest, AMalformedFrameGetsAnErrorNamingTheCauseAndTheReducerServesOn) {
  auto server = StartServer(kToken);
  ASSERT_NE(server, nullptr);
  Worker worker(server->port());
  ASSERT_NO_FATAL_FAILURE(Join(worker, HelloFor("malformed", 0, 1)));
  // Piece 3 of an operation of 2 pieces.
  Bytes frame = DataFrame(5, std::vector<float>(64, 1.0f));
  protocol::PieceHeader p;
  p.seq = 5;
  p.piece = 3;
  p.pieces = 2;
  p.total_count = 64;
  p.count = 64;
  std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head;
  protocol::EncodePieceFrame(protocol::FrameType::kData, p, &head);
  std::copy(head.begin(), head.end(), frame.begin());
  ASSERT_TRUE(worker.Send(frame));

  const protocol::ErrorFrame err = worker.Read().Error();
  EXPECT_EQ(err.code, Code::kProtocol);
  EXPECT_EQ(err.message, "rank 0: operation 5 piece 3 is out of range (2 pieces)");
  EXPECT_EQ(worker.Read().kind, Received::Kind::kEnd);
  worker.Close();
  EXPECT_TRUE(WaitFor([&] { return server->stats().connections_active == 0; }));
  EXPECT_EQ(server->stats().sessions_failed, 1u);

  Worker next(server->port());
  ASSERT_NO_FATAL_FAILURE(Join(next, HelloFor("after-malformed", 0, 1)));
  ASSERT_TRUE(next.Send(DataFrame(0, std::vector<float>(64, 2.0f))));
  EXPECT_TRUE(next.Read().Is(protocol::FrameType::kResult));
}

// The wrong job token ends the handshake with an error that says so: no
// session is opened, and the refusal is counted as one of authentication.
TEST(ConnectionTest, AWrongTokenIsRefusedWithAClearError) {
  auto server = StartServer(kToken);
  ASSERT_NE(server, nullptr);
  Worker worker(server->port());
  protocol::Challenge challenge;
  const Received answer = worker.Handshake(HelloFor("wrong-token", 0, 1), "not-the-job-token", &challenge);
  const protocol::ErrorFrame err = answer.Error();
  EXPECT_EQ(err.code, Code::kAuth);
  EXPECT_EQ(err.message, "job token does not match this reducer's");
  EXPECT_EQ(worker.Read().kind, Received::Kind::kEnd);
  worker.Close();
  EXPECT_TRUE(WaitFor([&] { return server->stats().connections_active == 0; }));
  const ServerStats stats = server->stats();
  EXPECT_EQ(stats.sessions_started, 0u);
  EXPECT_EQ(stats.admission.handshakes_refused[static_cast<size_t>(Code::kAuth)], 1u);
  EXPECT_EQ(stats.admission.handshakes, 0u);
}

// A rank whose process ends half way through a piece: the reducer notices
// at once, the other rank learns which rank and where, and the piece's
// memory (every session's to share) comes back while that rank is still
// connected.
TEST(ConnectionTest, AWorkerThatVanishesMidPieceIsNamedAndItsPieceLetGo) {
  auto server = StartServer(kToken);
  ASSERT_NE(server, nullptr);
  Worker rank0(server->port());
  Worker rank1(server->port());
  ASSERT_NO_FATAL_FAILURE(Join(rank0, HelloFor("vanishes", 0, 2), /*ready=*/false));
  ASSERT_NO_FATAL_FAILURE(Join(rank1, HelloFor("vanishes", 1, 2)));
  ASSERT_TRUE(rank0.Read().Is(protocol::FrameType::kReady));

  const Bytes frame = DataFrame(0, std::vector<float>(256 * 1024, 1.0f));  // 1 MiB
  ASSERT_TRUE(rank0.Send(std::span<const uint8_t>(frame).first(frame.size() / 2)));
  ASSERT_TRUE(WaitFor([&] { return server->stats().memory_in_use > 0; })) << "the piece was never allocated";
  rank0.Close();

  const protocol::ErrorFrame err = rank1.Read().Error();
  EXPECT_EQ(err.code, Code::kPeerFailed);
  EXPECT_NE(err.message.find("rank 0 disconnected from the reducer (connection lost while receiving operation 0"),
            std::string::npos)
      << err.message;
  EXPECT_TRUE(WaitFor([&] { return server->stats().memory_in_use == 0; }))
      << server->stats().memory_in_use << " bytes still held";
  EXPECT_EQ(rank1.Read().kind, Received::Kind::kEnd);
  rank1.Close();
  EXPECT_TRUE(WaitFor([&] { return server->stats().connections_active == 0; }));
  EXPECT_EQ(server->stats().sessions_active, 0u);
  EXPECT_EQ(server->stats().sessions_failed, 1u);
}

// Closing a socket with unread input resets the connection, and the worker
// would then lose the ERROR that says why. After an ERROR the reducer reads
// and drops what the worker still sends, so the worker reads the ERROR,
// then the end of the stream, and its own sends never fail.
TEST(ConnectionTest, AfterAnErrorTheWorkerReadsItThenTheEndWhileItsBytesAreDrained) {
  auto server = StartServer(kToken);
  ASSERT_NE(server, nullptr);
  Worker worker(server->port());
  ASSERT_NO_FATAL_FAILURE(Join(worker, HelloFor("drained", 0, 1)));
  // The broken header and more behind it, in one go: unread input when the
  // reducer decides to close.
  Bytes burst = BadMagicFrame();
  burst.resize(burst.size() + (256 << 10), 0x5a);
  bool sent = false;
  std::thread writer([&] {
    sent = worker.Send(burst);
    // The reducer, draining, sees the worker's end and closes at once.
    worker.ShutdownWrites();
  });
  const Received error = worker.Read();
  const Received end = worker.Read();
  writer.join();
  const protocol::ErrorFrame err = error.Error();
  EXPECT_EQ(err.code, Code::kProtocol);
  EXPECT_NE(err.message.find("bad magic"), std::string::npos) << err.message;
  EXPECT_EQ(end.kind, Received::Kind::kEnd) << "not an orderly end (kind " << static_cast<int>(end.kind) << ")";
  EXPECT_TRUE(sent) << "the worker's sends after its broken frame failed";
  EXPECT_TRUE(WaitFor([&] { return server->stats().connections_active == 0; }));
}

// A worker that keeps its end open after an ERROR: the reducer lingers,
// draining, then closes anyway. What the worker sent meanwhile was read,
// so that close is orderly too.
TEST(ConnectionTest, AfterAnErrorTheReducerLingersThenClosesAWorkerThatStaysOpen) {
  auto server = StartServer(kToken);
  ASSERT_NE(server, nullptr);
  Worker worker(server->port());
  ASSERT_NO_FATAL_FAILURE(Join(worker, HelloFor("lingers", 0, 1)));
  ASSERT_TRUE(worker.Send(BadMagicFrame()));
  EXPECT_EQ(worker.Read().Error().code, Code::kProtocol);
  ASSERT_EQ(worker.Read().kind, Received::Kind::kEnd);
  // While the reducer lingers its reads go on: these bytes are taken.
  const auto sent_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(worker.Send(Bytes(64 << 10, 0x5a)));
  ASSERT_TRUE(WaitFor([&] { return server->stats().connections_active == 0; }))
      << "the reducer never closed a stream the worker held open";
  // Within the linger, give or take a loaded machine's delays.
  EXPECT_LT(std::chrono::steady_clock::now() - sent_at, FramedSocket::kLinger + milliseconds(5000));
  EXPECT_EQ(worker.Read().kind, Received::Kind::kEnd) << "the close reset the connection";
}

}  // namespace
}  // namespace rs::server
