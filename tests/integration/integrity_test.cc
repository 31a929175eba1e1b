// End-to-end integrity: a CRC32C over every piece and every result, checked
// by the receiver. A corrupted contribution fails the session naming the hop
// rank -> reducer; a corrupted result fails the worker naming the hop
// reducer -> rank. The corruption is made by hand-written peers speaking the
// protocol (a raw worker against a real reducerd, a fake reducer against a
// real client), since a loopback link never corrupts anything itself.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <cstring>
#include <thread>

#include "protocol/auth.h"
#include "protocol/crc32c.h"
#include "protocol/wire.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::seconds;

// Reads one frame; returns its payload.
std::vector<uint8_t> ReadFrame(asio::ip::tcp::socket& s, protocol::FrameHeader* h) {
  std::array<uint8_t, protocol::kHeaderBytes> head;
  asio::read(s, asio::buffer(head));
  EXPECT_TRUE(protocol::DecodeHeader(head, 1 << 30, h).ok());
  std::vector<uint8_t> payload(h->payload_bytes);
  asio::read(s, asio::buffer(payload));
  return payload;
}

std::vector<uint8_t> PieceFrame(protocol::FrameType type, const protocol::PieceHeader& h,
                                const std::vector<float>& values) {
  std::array<uint8_t, protocol::kHeaderBytes + protocol::kPieceHeaderBytes> head;
  protocol::EncodePieceFrame(type, h, &head);
  std::vector<uint8_t> frame(head.size() + values.size() * sizeof(float));
  std::memcpy(frame.data(), head.data(), head.size());
  std::memcpy(frame.data() + head.size(), values.data(), values.size() * sizeof(float));
  return frame;
}

protocol::PieceHeader FloatPiece(size_t count) {
  protocol::PieceHeader h;
  h.pieces = 1;
  h.total_count = count;
  h.count = count;
  return h;
}

TEST(IntegrityTest, CorruptedContributionFailsTheSessionNamingTheHop) {
  ReducerProcess reducer;
  ASSERT_TRUE(reducer.ok()) << reducer.Log();
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), reducer.port()});
  protocol::Hello hello;
  hello.session = protocol::SessionIdFromName("corrupt-contribution");
  hello.world = 1;
  asio::write(s, asio::buffer(protocol::EncodeHello(hello)));
  protocol::FrameHeader h;
  ReadFrame(s, &h);
  ASSERT_EQ(h.type, protocol::FrameType::kChallenge);
  asio::write(s, asio::buffer(protocol::EncodeAuth({})));
  ReadFrame(s, &h);
  ASSERT_EQ(h.type, protocol::FrameType::kWelcome);
  ReadFrame(s, &h);
  ASSERT_EQ(h.type, protocol::FrameType::kReady);

  const std::vector<float> values(1000, 1.0f);
  protocol::PieceHeader piece = FloatPiece(values.size());
  piece.seq = 0;
  piece.flags = protocol::kPieceCrc;
  piece.crc = protocol::Crc32c(values.data(), values.size() * sizeof(float)) ^ 1;  // one bit off
  asio::write(s, asio::buffer(PieceFrame(protocol::FrameType::kData, piece, values)));
  const auto payload = ReadFrame(s, &h);
  ASSERT_EQ(h.type, protocol::FrameType::kError);
  protocol::ErrorFrame err;
  ASSERT_TRUE(protocol::DecodeError(payload, &err).ok());
  EXPECT_EQ(err.code, Code::kProtocol);
  EXPECT_NE(err.message.find("CRC32C mismatch on hop rank 0 -> reducer 127.0.0.1:" + std::to_string(reducer.port())),
            std::string::npos)
      << err.message;
  EXPECT_NE(err.message.find("operation 0 piece 0"), std::string::npos) << err.message;
}

// A reducer that joins one rank, then answers its first piece with the
// right elements and a wrong CRC.
void FakeReducer(asio::ip::tcp::acceptor& acceptor) {
  asio::ip::tcp::socket s(acceptor.get_executor());
  acceptor.accept(s);
  protocol::FrameHeader h;
  ReadFrame(s, &h);  // HELLO
  asio::write(s, asio::buffer(protocol::EncodeChallenge({})));
  ReadFrame(s, &h);  // AUTH
  protocol::Welcome welcome;
  welcome.max_piece_bytes = 1 << 20;
  asio::write(s, asio::buffer(protocol::EncodeWelcome(welcome)));
  asio::write(s, asio::buffer(protocol::EncodeReady()));
  auto payload = ReadFrame(s, &h);
  ASSERT_EQ(h.type, protocol::FrameType::kData);
  protocol::PieceHeader piece;
  ASSERT_TRUE(protocol::DecodePieceHeader(payload, h.payload_bytes, 1 << 20, &piece).ok());
  std::vector<float> values(piece.count);
  std::memcpy(values.data(), payload.data() + protocol::kPieceHeaderBytes, piece.PayloadBytes());
  piece.flags = protocol::kPieceCrc;
  piece.crc = protocol::Crc32c(values.data(), piece.PayloadBytes()) ^ 0x100;
  asio::write(s, asio::buffer(PieceFrame(protocol::FrameType::kResult, piece, values)));
  ReadFrame(s, &h);  // the worker's ERROR, or the end of the stream
}

TEST(IntegrityTest, CorruptedResultFailsTheWorkerNamingTheHop) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = acceptor.local_endpoint().port();
  std::thread reducer([&] {
    try {
      FakeReducer(acceptor);
    } catch (const std::exception&) {
      // The worker closed first: fine, the assertions are on its side.
    }
  });
  auto o = Options({{"127.0.0.1", port}}, "corrupt-result", 0, 1);
  o.streams_per_reducer = 1;
  o.crc = true;
  o.liveness_timeout = std::chrono::milliseconds(0);  // the fake sends no heartbeats
  auto client = client::Client::Create(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<float> v(1000, 2.0f);
  Status st = (*client)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)
                  ->Wait(seconds(30));
  EXPECT_EQ(st.code(), Code::kProtocol) << st.ToString();
  EXPECT_NE(st.message().find("CRC32C mismatch on hop reducer 127.0.0.1:" + std::to_string(port) + " -> rank 0"),
            std::string::npos)
      << st.message();
  client->reset();
  reducer.join();
}

TEST(IntegrityTest, ResultsAreRightWhicheverEndHasTheCheckOff) {
  for (const bool reducer_crc : {true, false}) {
    ReducerProcess reducer({"--crc", reducer_crc ? "1" : "0"});
    ASSERT_TRUE(reducer.ok()) << reducer.Log();
    for (const bool worker_crc : {true, false}) {
      const std::string session = "crc-" + std::to_string(reducer_crc) + std::to_string(worker_crc);
      RunRanks(2, [&](uint32_t rank) {
        auto o = Options({reducer.endpoint()}, session, rank, 2);
        o.crc = worker_crc;
        auto c = client::Client::Create(o);
        ASSERT_TRUE(c.ok()) << c.status().ToString();
        std::vector<float> v(300'000, 1.0f + static_cast<float>(rank));
        ASSERT_TRUE((*c)->AllReduce(v.data(), v.data(), v.size(), DataType::kFloat32, ReduceOp::kSum)->Wait().ok());
        EXPECT_EQ(v.front(), 3.0f);
        EXPECT_EQ(v.back(), 3.0f);
      });
    }
  }
}

}  // namespace
}  // namespace rs::testing
