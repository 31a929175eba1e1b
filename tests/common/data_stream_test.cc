// The data plane's byte stream with TLS on (common/data_stream.h): what one
// end writes, gathered from many buffers, the other reads back exactly,
// however its reads cut it; and a TLS handshake that cannot succeed says why.
#include "common/data_stream.h"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

namespace rs {
namespace {

using asio::ip::tcp;

// Two connected sockets on 127.0.0.1, one io_context, run by the test.
struct StreamPair {
  asio::io_context io;
  tcp::socket server{io};
  tcp::socket client{io};
  DataStream server_stream{server};
  DataStream client_stream{client};

  StreamPair() {
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
  }

  // Runs the io_context until `done` or 20 s pass.
  template <typename Done>
  bool RunUntil(Done done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done() && std::chrono::steady_clock::now() < end) {
      io.restart();
      io.run_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  // Both TLS handshakes; their outcomes.
  std::pair<Status, Status> Handshake(const std::string& server_token, const std::string& client_token) {
    std::optional<Status> s, c;
    server_stream.StartTls(*DataTls::Create(DataTls::Role::kReducer, server_token),
                           [&](const Status& st) { s = st; });
    client_stream.StartTls(*DataTls::Create(DataTls::Role::kWorker, client_token),
                           [&](const Status& st) { c = st; });
    EXPECT_TRUE(RunUntil([&] { return s && c; })) << "the TLS handshakes did not end";
    return {s.value_or(Status(Code::kTimeout, "none")), c.value_or(Status(Code::kTimeout, "none"))};
  }
};

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 131 + (i >> 9));
  return v;
}

TEST(DataStreamTest, TlsCarriesGatheredWritesExactlyHoweverTheReadsCutThem) {
  StreamPair p;
  auto [server_status, client_status] = p.Handshake("the-job-token", "the-job-token");
  ASSERT_TRUE(server_status.ok()) << server_status.ToString();
  ASSERT_TRUE(client_status.ok()) << client_status.ToString();
  ASSERT_TRUE(p.client_stream.tls());

  // As the client writes frames: small heads between large payloads, in one
  // gathered write, and the server reads them head by head.
  std::vector<std::vector<uint8_t>> parts;
  for (size_t i = 0; i < 40; ++i) {
    parts.push_back(Pattern(24 + i % 3, static_cast<uint8_t>(i)));
    parts.push_back(Pattern(i % 7 == 0 ? 1 : (size_t{1} << (10 + i % 11)) + i, static_cast<uint8_t>(i * 7)));
  }
  std::vector<asio::const_buffer> buffers;
  std::vector<uint8_t> expected;
  for (const auto& part : parts) {
    buffers.emplace_back(asio::buffer(part));
    expected.insert(expected.end(), part.begin(), part.end());
  }
  bool written = false;
  asio::async_write(p.client_stream, buffers, [&](const asio::error_code& ec, size_t n) {
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(n, expected.size());
    written = true;
  });
  std::vector<uint8_t> got(expected.size());
  size_t offset = 0;
  bool read_all = false;
  std::function<void()> read_next = [&] {
    if (offset == got.size()) {
      read_all = true;
      return;
    }
    const size_t want = std::min<size_t>(got.size() - offset, offset % 3 == 0 ? 24 : 300'001);
    asio::async_read(p.server_stream, asio::buffer(got.data() + offset, want), [&, want](const asio::error_code& ec,
                                                                                          size_t n) {
      ASSERT_FALSE(ec) << ec.message();
      ASSERT_EQ(n, want);
      offset += n;
      read_next();
    });
  };
  read_next();
  ASSERT_TRUE(p.RunUntil([&] { return written && read_all; }));
  EXPECT_TRUE(got == expected) << "the bytes read differ from the bytes written";

  // And back, while the other side closes: the reader sees the end.
  const std::vector<uint8_t> reply = Pattern(5 << 20, 9);
  bool replied = false;
  asio::async_write(p.server_stream, asio::buffer(reply), [&](const asio::error_code& ec, size_t) {
    EXPECT_FALSE(ec) << ec.message();
    replied = true;
    p.server.shutdown(tcp::socket::shutdown_send);
  });
  std::vector<uint8_t> back(reply.size() + 1);
  std::optional<asio::error_code> end;
  size_t back_bytes = 0;
  asio::async_read(p.client_stream, asio::buffer(back), [&](const asio::error_code& ec, size_t n) {
    end = ec;
    back_bytes = n;
  });
  ASSERT_TRUE(p.RunUntil([&] { return replied && end.has_value(); }));
  EXPECT_EQ(*end, asio::error::eof) << end->message();
  ASSERT_EQ(back_bytes, reply.size());
  back.resize(back_bytes);
  EXPECT_TRUE(back == reply);
}

// Writes cut small on purpose end a record (MSG_EOR), so that the kernel
// sends each as packets of its own: on plain TCP they carry exactly what was
// written, in order, marked or not, one after another.
TEST(DataStreamTest, WritesThatEndARecordCarryTheirBytesInOrder) {
  StreamPair p;
  std::vector<uint8_t> expected;
  size_t writes = 0;
  std::function<void()> write_next = [&] {
    if (writes == 64) return;
    p.client_stream.set_end_of_record(writes % 4 != 3);  // as a stream's writes switch
    auto slice = std::make_shared<std::vector<uint8_t>>(Pattern(8192 + writes, static_cast<uint8_t>(writes)));
    expected.insert(expected.end(), slice->begin(), slice->end());
    ++writes;
    asio::async_write(p.client_stream, asio::buffer(*slice), [&, slice](const asio::error_code& ec, size_t n) {
      ASSERT_FALSE(ec) << ec.message();
      ASSERT_EQ(n, slice->size());
      write_next();
    });
  };
  write_next();
  size_t total = 0;
  for (size_t i = 0; i < 64; ++i) total += 8192 + i;
  std::vector<uint8_t> got(total);
  bool read_all = false;
  asio::async_read(p.server_stream, asio::buffer(got), [&](const asio::error_code& ec, size_t n) {
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_EQ(n, total);
    read_all = true;
  });
  ASSERT_TRUE(p.RunUntil([&] { return read_all && writes == 64; }));
  EXPECT_TRUE(got == expected) << "the bytes read differ from the bytes written";
}

// A reducer that dies while a worker writes to it: OpenSSL's write() to the
// dead socket raises SIGPIPE, whose default action would end this process
// (a training job) instead of failing the write for the failover to handle.
// Nothing here ignores SIGPIPE: the test process is the training process.
TEST(DataStreamTest, WritingToAPeerThatIsGoneFailsTheWriteAndRaisesNoSignal) {
  StreamPair p;
  auto [server_status, client_status] = p.Handshake("the-job-token", "the-job-token");
  ASSERT_TRUE(server_status.ok()) << server_status.ToString();
  ASSERT_TRUE(client_status.ok()) << client_status.ToString();
  // Closed as a dying process's socket is: the worker gets a FIN, and its
  // next bytes a reset, after which Linux fails a write with EPIPE.
  p.server.close();
  const std::vector<uint8_t> bytes = Pattern(1 << 20, 3);
  std::optional<asio::error_code> failed;
  std::function<void()> write_next = [&] {
    asio::async_write(p.client_stream, asio::buffer(bytes), [&](const asio::error_code& ec, size_t) {
      if (ec) {
        failed = ec;
      } else {
        write_next();
      }
    });
  };
  write_next();
  ASSERT_TRUE(p.RunUntil([&] { return failed.has_value(); })) << "writes to a closed peer kept succeeding";
  EXPECT_TRUE(*failed) << "the write failed without an error";
}

TEST(DataStreamTest, ADifferentTokenFailsTheTlsHandshakeOnBothSidesNamingTheToken) {
  StreamPair p;
  auto [server_status, client_status] = p.Handshake("the-job-token", "another-token");
  EXPECT_EQ(server_status.code(), Code::kAuth) << server_status.ToString();
  EXPECT_EQ(client_status.code(), Code::kAuth) << client_status.ToString();
  EXPECT_NE(server_status.message().find("job token differs"), std::string::npos) << server_status.ToString();
  EXPECT_NE(client_status.message().find("job token differs"), std::string::npos) << client_status.ToString();
}

TEST(DataStreamTest, APeerWithoutTlsIsNamedByTheAlertItSends) {
  StreamPair p;
  // What a reducer without --tls answers a ClientHello with (connection.cc).
  std::optional<Status> client_status;
  p.client_stream.StartTls(*DataTls::Create(DataTls::Role::kWorker, "the-job-token"),
                           [&](const Status& st) { client_status = st; });
  std::array<uint8_t, 5> hello_head{};
  asio::read(p.server, asio::buffer(hello_head));
  EXPECT_EQ(hello_head[0], kTlsHandshakeRecord);
  asio::write(p.server, asio::buffer(kNoTlsAlert));
  ASSERT_TRUE(p.RunUntil([&] { return client_status.has_value(); }));
  EXPECT_EQ(client_status->code(), Code::kAuth);
  EXPECT_NE(client_status->message().find("no TLS on its data plane"), std::string::npos) << client_status->ToString();
  EXPECT_NE(client_status->message().find("--tls"), std::string::npos) << client_status->ToString();
}

TEST(DataStreamTest, APeerThatClosesDuringTheHandshakeIsAConnectionErrorNotARefusal) {
  StreamPair p;
  std::optional<Status> client_status;
  p.client_stream.StartTls(*DataTls::Create(DataTls::Role::kWorker, "the-job-token"),
                           [&](const Status& st) { client_status = st; });
  p.server.close();
  ASSERT_TRUE(p.RunUntil([&] { return client_status.has_value(); }));
  EXPECT_EQ(client_status->code(), Code::kIo) << client_status->ToString();
}

TEST(DataStreamTest, TlsNeedsAToken) {
  auto tls = DataTls::Create(DataTls::Role::kWorker, "");
  ASSERT_FALSE(tls.ok());
  EXPECT_EQ(tls.status().code(), Code::kInvalidArgument);
  EXPECT_NE(tls.status().message().find("job token"), std::string::npos) << tls.status().ToString();
}

}  // namespace
}  // namespace rs
