// The transport under both ends of the data plane (common/framed_socket.h),
// over 127.0.0.1, plain and with TLS: a queue of frames arrives whole and in
// order, gathered at most FramedSocket::kMaxBatch frames per write; frames
// larger than the socket holds go out in partial writes, each counted as
// progress; a write to a peer that reset the connection fails once; and a
// close writes its last frame, sends FIN, drains, and ends at the peer's
// close or at the linger, without resetting the connection.
#include "common/framed_socket.h"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <deque>
#include <optional>
#include <vector>

namespace rs {
namespace {

using asio::ip::tcp;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A frame as both ends queue them: a small header and a payload.
struct Frame {
  std::array<uint8_t, 8> head{};
  std::vector<uint8_t> payload;
};

Frame MakeFrame(uint32_t index, size_t payload_bytes) {
  Frame f;
  for (size_t i = 0; i < f.head.size(); ++i) f.head[i] = static_cast<uint8_t>(index >> (8 * (i % 4)));
  f.payload.resize(payload_bytes);
  for (size_t i = 0; i < payload_bytes; ++i) f.payload[i] = static_cast<uint8_t>(index * 31 + i * 131 + (i >> 9));
  return f;
}

std::vector<uint8_t> Bytes(const std::deque<Frame>& frames) {
  std::vector<uint8_t> all;
  for (const Frame& f : frames) {
    all.insert(all.end(), f.head.begin(), f.head.end());
    all.insert(all.end(), f.payload.begin(), f.payload.end());
  }
  return all;
}

// The framed end: an owner with a plain queue, which records what the layer
// asked of it.
class QueueOwner final : public FramedSocket::Owner {
 public:
  QueueOwner(tcp::socket socket, milliseconds linger) : framed(std::move(socket), *this, linger) {}

  bool FramesQueued() const override { return !queue.empty(); }
  size_t GatherFrames(size_t max_frames, std::vector<asio::const_buffer>* buffers) override {
    in_flight = std::min(queue.size(), max_frames);
    for (size_t i = 0; i < in_flight; ++i) {
      buffers->emplace_back(asio::buffer(queue[i].head));
      buffers->emplace_back(asio::buffer(queue[i].payload));
    }
    batches.push_back(in_flight);
    return in_flight;
  }
  void FramesWritten(const asio::error_code& ec) override {
    if (ec) {
      errors.push_back(ec);
      return;
    }
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(in_flight));
  }
  void SocketEnded() override { ended_at = Clock::now(); }
  std::shared_ptr<void> KeepAlive() override { return nullptr; }  // outlives the test's io_context run

  FramedSocket framed;
  std::deque<Frame> queue;
  size_t in_flight = 0;
  std::vector<size_t> batches;
  std::vector<asio::error_code> errors;
  std::optional<Clock::time_point> ended_at;
};

// A connected pair on 127.0.0.1: the framed end, and a plain peer with its
// own DataStream; TLS on both when the test is parameterised so.
class FramedSocketTest : public ::testing::TestWithParam<bool> {
 protected:
  void Connect(milliseconds linger = FramedSocket::kLinger, std::optional<int> buffer_bytes = std::nullopt) {
    tcp::acceptor acceptor(io_, {asio::ip::make_address("127.0.0.1"), 0});
    tcp::socket framed_socket(io_);
    if (buffer_bytes) {
      // Small buffers on both sides: a large frame takes many partial writes.
      framed_socket.open(tcp::v4());
      framed_socket.set_option(asio::socket_base::send_buffer_size(*buffer_bytes));
      acceptor.set_option(asio::socket_base::receive_buffer_size(*buffer_bytes));  // the accepted socket's
    }
    framed_socket.connect(acceptor.local_endpoint());
    acceptor.accept(peer_);
    owner_.emplace(std::move(framed_socket), linger);
    if (!GetParam()) return;
    std::optional<Status> a, b;
    owner_->framed.stream().StartTls(*DataTls::Create(DataTls::Role::kWorker, "token"),
                                     [&](const Status& st) { a = st; });
    peer_stream_.StartTls(*DataTls::Create(DataTls::Role::kReducer, "token"), [&](const Status& st) { b = st; });
    ASSERT_TRUE(RunUntil([&] { return a && b; }));
    ASSERT_TRUE(a->ok()) << a->ToString();
    ASSERT_TRUE(b->ok()) << b->ToString();
  }

  // Runs the io_context until `done` or 20 s pass.
  template <typename Done>
  bool RunUntil(Done done, milliseconds limit = milliseconds(20'000)) {
    const auto end = Clock::now() + limit;
    while (!done() && Clock::now() < end) {
      io_.restart();
      io_.run_for(milliseconds(5));
    }
    return done();
  }

  // The peer writes `bytes` (through TLS when on), running the io_context.
  void PeerWrite(const std::vector<uint8_t>& bytes) {
    std::optional<asio::error_code> wrote;
    asio::async_write(peer_stream_, asio::buffer(bytes), [&](const asio::error_code& e, size_t) { wrote = e; });
    ASSERT_TRUE(RunUntil([&] { return wrote.has_value(); }));
    ASSERT_FALSE(*wrote) << wrote->message();
  }

  // The peer reads exactly `bytes`; `*ec` its outcome.
  void PeerRead(std::vector<uint8_t>* into, size_t bytes, std::optional<asio::error_code>* ec) {
    into->resize(bytes);
    asio::async_read(peer_stream_, asio::buffer(*into),
                     [ec](const asio::error_code& e, size_t) { *ec = e; });
  }

  asio::io_context io_;
  tcp::socket peer_{io_};
  DataStream peer_stream_{peer_};
  std::optional<QueueOwner> owner_;
};

TEST_P(FramedSocketTest, QueuedFramesArriveInOrderAtMostKMaxBatchPerWrite) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  // Small frames and a few larger ones, queued before the first write.
  for (uint32_t i = 0; i < 40; ++i) owner_->queue.push_back(MakeFrame(i, i % 9 == 0 ? (64 << 10) + i : 24 + i));
  const std::vector<uint8_t> expected = Bytes(owner_->queue);
  std::vector<uint8_t> got;
  std::optional<asio::error_code> read;
  PeerRead(&got, expected.size(), &read);
  owner_->framed.Flush();
  ASSERT_TRUE(RunUntil([&] { return read.has_value() && owner_->queue.empty() && !owner_->framed.writing(); }));
  ASSERT_FALSE(*read) << read->message();
  EXPECT_EQ(got, expected);
  EXPECT_EQ(owner_->batches, (std::vector<size_t>{16, 16, 8}));
  EXPECT_TRUE(owner_->errors.empty());
  EXPECT_FALSE(owner_->ended_at.has_value());
}

TEST_P(FramedSocketTest, FramesLargerThanTheSocketHoldsGoInPartialWritesEachCounted) {
  ASSERT_NO_FATAL_FAILURE(Connect(FramedSocket::kLinger, 64 << 10));
  for (uint32_t i = 0; i < 3; ++i) owner_->queue.push_back(MakeFrame(i, (4 << 20) + i * 1001));
  const std::vector<uint8_t> expected = Bytes(owner_->queue);
  std::vector<uint8_t> got;
  std::optional<asio::error_code> read;
  PeerRead(&got, expected.size(), &read);
  owner_->framed.Flush();
  ASSERT_TRUE(RunUntil([&] { return read.has_value() && owner_->queue.empty() && !owner_->framed.writing(); }));
  ASSERT_FALSE(*read) << read->message();
  EXPECT_EQ(got, expected);
  EXPECT_EQ(owner_->batches, (std::vector<size_t>{3}));  // one gathered write, many system calls
  // A slow large frame still shows progress to the owner's liveness.
  EXPECT_GT(owner_->framed.write_progress(), 10u);
}

TEST_P(FramedSocketTest, AWriteToAPeerThatResetTheConnectionFailsOnce) {
  ASSERT_NO_FATAL_FAILURE(Connect());
  peer_.set_option(asio::socket_base::linger(true, 0));  // the close resets the connection
  peer_.close();
  // The reset may arrive after a first write went out: write until one fails.
  for (uint32_t i = 0; i < 50 && owner_->errors.empty(); ++i) {
    owner_->queue.push_back(MakeFrame(i, 1 << 16));
    owner_->framed.Flush();
    ASSERT_TRUE(RunUntil([&] { return !owner_->framed.writing(); }));
  }
  ASSERT_EQ(owner_->errors.size(), 1u);
  EXPECT_TRUE(owner_->framed.write_failed());
  // No write starts after a failed one: the owner hears of it once.
  const size_t gathered = owner_->batches.size();
  for (uint32_t i = 0; i < 3; ++i) {
    owner_->queue.push_back(MakeFrame(100 + i, 16));
    owner_->framed.Flush();
  }
  RunUntil([] { return false; }, milliseconds(50));
  EXPECT_EQ(owner_->errors.size(), 1u);
  EXPECT_EQ(owner_->batches.size(), gathered);
  EXPECT_FALSE(owner_->framed.writing());
}

TEST_P(FramedSocketTest, ACloseWritesTheLastFrameThenEndsWhenThePeerCloses) {
  // A linger far longer than the test: ending early means the peer's close ended it.
  ASSERT_NO_FATAL_FAILURE(Connect(milliseconds(60'000)));
  // A read pending when the close starts (as a stream waiting for a header):
  // its completion goes to its handler, then the drain goes on from it.
  std::array<uint8_t, 8> header{};
  std::optional<asio::error_code> header_read;
  owner_->framed.Read(asio::buffer(header), asio::transfer_all(),
                      [&](const asio::error_code& ec, size_t) { header_read = ec; });
  owner_->queue.push_back(MakeFrame(7, 100 << 10));
  const std::vector<uint8_t> expected = Bytes(owner_->queue);
  owner_->framed.CloseAfterWrites(milliseconds(60'000));
  EXPECT_TRUE(owner_->framed.closing());

  std::vector<uint8_t> got;
  std::optional<asio::error_code> read;
  PeerRead(&got, expected.size(), &read);
  ASSERT_TRUE(RunUntil([&] { return read.has_value(); }));
  ASSERT_FALSE(*read) << read->message();
  EXPECT_EQ(got, expected);
  // Then FIN: the peer sees the end of the stream after the last frame.
  std::array<uint8_t, 1> more{};
  std::optional<asio::error_code> end;
  asio::async_read(peer_stream_, asio::buffer(more), [&](const asio::error_code& e, size_t) { end = e; });
  ASSERT_TRUE(RunUntil([&] { return end.has_value(); }));
  EXPECT_EQ(*end, asio::error::eof) << end->message();
  EXPECT_TRUE(owner_->framed.lingering());
  EXPECT_FALSE(owner_->ended_at.has_value());

  // The peer answers (the framed end drains it) and closes: that ends it.
  ASSERT_NO_FATAL_FAILURE(PeerWrite(std::vector<uint8_t>(8 + (200 << 10), 0x5a)));
  const auto closed_at = Clock::now();
  peer_.close();
  ASSERT_TRUE(RunUntil([&] { return owner_->ended_at.has_value(); }));
  EXPECT_LT(*owner_->ended_at - closed_at, milliseconds(10'000));
  ASSERT_TRUE(header_read.has_value());
  EXPECT_FALSE(*header_read) << header_read->message();
  EXPECT_FALSE(owner_->framed.closing());
  EXPECT_FALSE(owner_->framed.socket().is_open());
}

TEST_P(FramedSocketTest, ALingerEndsAtItsLimitWhenThePeerStaysOpenWithoutResettingIt) {
  constexpr milliseconds kLinger(1500);
  ASSERT_NO_FATAL_FAILURE(Connect(kLinger));
  owner_->queue.push_back(MakeFrame(1, 1000));
  const std::vector<uint8_t> expected = Bytes(owner_->queue);
  owner_->framed.CloseAfterWrites(milliseconds(60'000));
  std::vector<uint8_t> got;
  std::optional<asio::error_code> read;
  PeerRead(&got, expected.size(), &read);
  ASSERT_TRUE(RunUntil([&] { return read.has_value() && owner_->framed.lingering(); }));
  const auto linger_from = Clock::now();
  EXPECT_EQ(got, expected);
  // The peer keeps sending, more than the socket buffers hold, and never
  // closes: the framed end reads and drops it all (else this write would
  // stall, then fail at the close), so the close at the limit finds no
  // unread input to turn into a reset.
  ASSERT_NO_FATAL_FAILURE(PeerWrite(std::vector<uint8_t>(16 << 20, 0x11)));
  ASSERT_TRUE(RunUntil([&] { return owner_->ended_at.has_value(); }));
  EXPECT_GE(*owner_->ended_at - linger_from, kLinger - milliseconds(100));
  EXPECT_LT(*owner_->ended_at - linger_from, milliseconds(10'000));
  EXPECT_FALSE(owner_->framed.socket().is_open());
  // Everything the framed end wrote arrived; then the orderly end.
  std::array<uint8_t, 1> more{};
  std::optional<asio::error_code> end;
  asio::async_read(peer_stream_, asio::buffer(more), [&](const asio::error_code& e, size_t) { end = e; });
  ASSERT_TRUE(RunUntil([&] { return end.has_value(); }));
  EXPECT_EQ(*end, asio::error::eof) << end->message();
}

TEST_P(FramedSocketTest, AWriteThePeerNeverTakesEndsAtTheWriteLimit) {
  ASSERT_NO_FATAL_FAILURE(Connect(FramedSocket::kLinger, 64 << 10));
  // More than both buffers hold, and the peer reads nothing.
  owner_->queue.push_back(MakeFrame(1, 8 << 20));
  const auto from = Clock::now();
  owner_->framed.CloseAfterWrites(milliseconds(300));
  ASSERT_TRUE(RunUntil([&] { return owner_->ended_at.has_value(); }));
  EXPECT_GE(*owner_->ended_at - from, milliseconds(250));
  EXPECT_FALSE(owner_->framed.lingering());
  EXPECT_FALSE(owner_->framed.socket().is_open());
}

INSTANTIATE_TEST_SUITE_P(PlainAndTls, FramedSocketTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Tls" : "Plain"; });

}  // namespace
}  // namespace rs
