// Float32 sums on a 16-bit wire (ClientOptions::wire_dtype, REDUCER_WIRE_DTYPE)
// end to end: real reducerd processes, ranks as threads with the real client.
// What a user relies on: every rank gets the same bits, run after run, and
// they are exactly the double-rounded sum (each input rounded to the wire
// type once, the rank-order float32 sum rounded once); a value the wire type
// cannot hold goes as float32 and is counted, never turned into Inf; ranks
// that disagree, or an old peer, get an error naming both sides; CRC32C and
// failover keep working; other types and ops are untouched.
#include <signal.h>

#include <gtest/gtest.h>

#include <asio.hpp>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

#include "common/half.h"
#include "protocol/wire.h"
#include "tests/support/reducer_fleet.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint32_t kWireWorld = 4;

// What the wire type carries of x where it can, x itself where it cannot
// (the rule of kernels::WidenWhereFinite and the client's fallback).
float OnWire(DataType wire, float x) {
  if (wire == DataType::kFloat16) {
    const uint16_t h = FloatToHalf(x);
    return (h & 0x7C00) == 0x7C00 ? x : HalfToFloat(h);
  }
  const uint16_t b = FloatToBfloat16(x);
  return (b & 0x7F80) == 0x7F80 ? x : Bfloat16ToFloat(b);
}

// The double-rounded rank-order sum of element i.
float Expected(DataType wire, const std::vector<std::vector<float>>& inputs, size_t i) {
  float sum = OnWire(wire, inputs[0][i]);
  for (size_t r = 1; r < inputs.size(); ++r) sum += OnWire(wire, inputs[r][i]);
  return OnWire(wire, sum);
}

// Gradient-like values: both signs, magnitudes from 2^-20 to 2^9, so that
// a sum in another order or with other roundings gives other bits.
std::vector<float> Gradients(uint32_t rank, int op, size_t count) {
  std::vector<float> out(count);
  uint64_t x = 0x9E3779B97F4A7C15ull * (rank + 1) + 0xBF58476D1CE4E5B9ull * static_cast<uint64_t>(op + 1);
  for (float& v : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = std::ldexp(static_cast<float>(x % 2001) - 1000.0f, static_cast<int>((x >> 20) % 30) - 30);
  }
  return out;
}

struct Run {
  Status status;
  std::vector<std::vector<float>> results;  // per operation
  client::ClientStats stats;
};

// Every rank all-reduces inputs(rank, k) for each k, `in_flight` at a time,
// in place (the receive buffer holds the input).
std::vector<Run> RunJob(const std::vector<client::Endpoint>& reducers, const std::string& session,
                        const std::function<void(client::ClientOptions&)>& tune, int ops,
                        const std::function<std::vector<float>(uint32_t rank, int k)>& inputs,
                        int fault_after = -1, const std::function<void()>& fault = {}) {
  std::vector<Run> runs(kWireWorld);
  RunRanks(kWireWorld, [&](uint32_t rank) {
    Run& run = runs[rank];
    auto o = Options(reducers, session, rank, kWireWorld);
    tune(o);
    auto c = client::Client::Create(o);
    if (!c.ok()) {
      run.status = c.status();
      return;
    }
    run.results.resize(ops);
    std::deque<std::pair<int, std::shared_ptr<client::Operation>>> in_flight;
    auto finish_one = [&] {
      auto [k, op] = in_flight.front();
      in_flight.pop_front();
      const Status st = op->Wait(seconds(60));
      if (!st.ok() && run.status.ok()) run.status = st;
      if (rank == 0 && k == fault_after && fault) fault();
    };
    for (int k = 0; k < ops && run.status.ok(); ++k) {
      if (in_flight.size() == 4) finish_one();
      run.results[k] = inputs(rank, k);
      in_flight.emplace_back(k, (*c)->AllReduce(run.results[k].data(), run.results[k].data(),
                                                run.results[k].size(), DataType::kFloat32, ReduceOp::kSum));
    }
    while (!in_flight.empty()) finish_one();
    run.stats = (*c)->stats();
  });
  return runs;
}

// Every rank got the double-rounded sum, bit for bit.
void ExpectDoubleRounded(DataType wire, const std::vector<Run>& runs, int ops,
                         const std::function<std::vector<float>(uint32_t rank, int k)>& inputs) {
  for (uint32_t r = 0; r < kWireWorld; ++r) ASSERT_TRUE(runs[r].status.ok()) << "rank " << r << ": " << runs[r].status.ToString();
  for (int k = 0; k < ops; ++k) {
    std::vector<std::vector<float>> in;
    for (uint32_t r = 0; r < kWireWorld; ++r) in.push_back(inputs(r, k));
    size_t wrong = 0;
    for (size_t i = 0; i < in[0].size(); ++i) {
      const uint32_t want = std::bit_cast<uint32_t>(Expected(wire, in, i));
      for (uint32_t r = 0; r < kWireWorld; ++r) {
        if (std::bit_cast<uint32_t>(runs[r].results[k][i]) != want && ++wrong <= 3) {
          ADD_FAILURE() << "operation " << k << " element " << i << " on rank " << r << ": got "
                        << runs[r].results[k][i] << ", want " << std::bit_cast<float>(want);
        }
      }
    }
    EXPECT_EQ(wrong, 0u) << "operation " << k;
  }
}

class WireDtypeTest : public ReducerFleetTest {};

// Sizes from one piece to many, on both reducers.
std::vector<float> Sized(uint32_t rank, int k) {
  return Gradients(rank, k, std::vector<size_t>{1000, 65'537, 300'001}[k % 3]);
}

TEST_F(WireDtypeTest, ResultsAreTheDoubleRoundedSumOnEveryRankAndEveryRun) {
  Start(2);
  for (DataType wire : {DataType::kBfloat16, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(wire));
    for (bool crc : {false, true}) {
      const std::string name = std::string(DataTypeName(wire)) + (crc ? "-crc" : "");
      const auto tune = [&](client::ClientOptions& o) {
        o.wire_dtype = wire;
        o.crc = crc;
      };
      const auto first = RunJob(Endpoints(), name + "-1", tune, 6, Sized);
      ExpectDoubleRounded(wire, first, 6, Sized);
      const auto second = RunJob(Endpoints(), name + "-2", tune, 6, Sized);
      for (uint32_t r = 0; r < kWireWorld; ++r) {
        ASSERT_TRUE(second[r].status.ok()) << second[r].status.ToString();
        EXPECT_EQ(second[r].results, first[r].results) << "rank " << r << " differs from the first run";
        EXPECT_EQ(first[r].stats.wire_fallbacks, 0u);
      }
    }
  }
  // Not the same as float32: the wire really was 16 bits wide.
  const auto plain = RunJob(Endpoints(), "float32", [](client::ClientOptions&) {}, 1, Sized);
  const auto bf16 = RunJob(Endpoints(), "bf16-again", [](client::ClientOptions& o) { o.wire_dtype = DataType::kBfloat16; }, 1, Sized);
  ASSERT_TRUE(plain[0].status.ok() && bf16[0].status.ok());
  EXPECT_NE(plain[0].results[0], bf16[0].results[0]);
}

TEST_F(WireDtypeTest, ValuesBeyondFloat16GoAsFloat32AndAreCountedNeverInf) {
  Start(1);
  // Pieces with a value past 65504 fall back; sums past it come back in
  // float32; NaN and Inf inputs pass through as float32 does them.
  const auto inputs = [](uint32_t rank, int) {
    std::vector<float> v = Gradients(rank, 0, 20'000);
    v[7] = 1e5f;            // this piece falls back on every rank
    v[8] = 40'000.0f;       // fits; four of them do not
    v[9] = rank == 2 ? std::numeric_limits<float>::infinity() : 1.0f;
    return v;
  };
  const auto runs = RunJob(Endpoints(), "fp16-range", [](client::ClientOptions& o) { o.wire_dtype = DataType::kFloat16; },
                           2, inputs);
  ExpectDoubleRounded(DataType::kFloat16, runs, 2, inputs);
  for (uint32_t r = 0; r < kWireWorld; ++r) {
    EXPECT_EQ(runs[r].results[0][7], 4e5f);
    EXPECT_EQ(runs[r].results[0][8], 160'000.0f);
    EXPECT_EQ(runs[r].results[0][9], std::numeric_limits<float>::infinity());
    EXPECT_GE(runs[r].stats.wire_fallbacks, 2u) << "rank " << r << ": the pieces that fell back are counted";
  }
}

TEST_F(WireDtypeTest, OtherTypesAndOpsIgnoreTheSetting) {
  Start(1);
  RunRanks(kWireWorld, [&](uint32_t rank) {
    auto o = Options(Endpoints(), "others", rank, kWireWorld);
    o.wire_dtype = DataType::kBfloat16;
    auto c = client::Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    // float32 max keeps every bit; float64 sums are float64 sums.
    std::vector<float> in = {1.0f + 0x1p-20f * static_cast<float>(rank), -3.0f};
    std::vector<float> out(2);
    ASSERT_TRUE((*c)->AllReduce(in.data(), out.data(), 2, DataType::kFloat32, ReduceOp::kMax)->Wait(seconds(30)).ok());
    EXPECT_EQ(out[0], 1.0f + 0x1p-20f * 3);
    std::vector<double> d = {0.1 * (rank + 1)};
    std::vector<double> dout(1);
    ASSERT_TRUE((*c)->AllReduce(d.data(), dout.data(), 1, DataType::kFloat64, ReduceOp::kSum)->Wait(seconds(30)).ok());
    EXPECT_EQ(dout[0], ((0.1 + 0.2) + 0.30000000000000004) + 0.4);
  });
}

TEST_F(WireDtypeTest, RanksThatDisagreeGetAnErrorNamingBothSettings) {
  Start(1);
  // Two ranks, so that whichever joins second meets the other's session
  // (with more, a rank arriving after the failed session was dropped would
  // open a new one and time out instead).
  std::vector<Status> statuses(2);
  RunRanks(2, [&](uint32_t rank) {
    auto o = Options(Endpoints(), "disagree", rank, 2);
    o.connect_timeout = seconds(20);
    o.wire_dtype = rank == 1 ? DataType::kFloat16 : DataType::kBfloat16;
    auto c = client::Client::Create(o);
    statuses[rank] = c.ok() ? Status::Ok() : c.status();
  });
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_FALSE(statuses[r].ok()) << "rank " << r;
    EXPECT_EQ(statuses[r].code(), Code::kMismatch) << statuses[r].ToString();
    const std::string& m = statuses[r].message();
    EXPECT_NE(m.find("with wire type "), std::string::npos) << m;
    EXPECT_NE(m.find("float16"), std::string::npos) << m;
    EXPECT_NE(m.find("bfloat16"), std::string::npos) << m;
    EXPECT_NE(m.find("every rank must use the same REDUCER_WIRE_DTYPE"), std::string::npos) << m;
  }
}

TEST_F(WireDtypeTest, AnOldPeerIsToldBothVersions) {
  Start(1);
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), reducers_[0]->port()});
  protocol::Hello hello;
  hello.world = 1;
  asio::write(s, asio::buffer(protocol::EncodeHello(hello, /*version=*/2)));  // a v2 worker
  std::array<uint8_t, protocol::kHeaderBytes> head;
  asio::read(s, asio::buffer(head));
  protocol::FrameHeader h;
  ASSERT_TRUE(protocol::DecodeHeader(head, 1 << 20, &h).ok());
  ASSERT_EQ(h.type, protocol::FrameType::kError);
  std::vector<uint8_t> payload(h.payload_bytes);
  asio::read(s, asio::buffer(payload));
  protocol::ErrorFrame err;
  ASSERT_TRUE(protocol::DecodeError(payload, &err).ok());
  EXPECT_EQ(err.code, Code::kVersion);
  EXPECT_EQ(err.message, "protocol version 2 not supported, this reducer speaks 3");
}

// Sized, with a value bfloat16 cannot carry in every largest operation: an
// Inf from rank 1 and float32's largest from rank 2 (it rounds to Inf).
std::vector<float> SizedBeyondBfloat16(uint32_t rank, int k) {
  std::vector<float> v = Sized(rank, k);
  if (k % 3 == 2 && rank == 1) v[70'000] = std::numeric_limits<float>::infinity();
  if (k % 3 == 2 && rank == 2) v[200'000] = std::numeric_limits<float>::max();
  return v;
}

// The failover copies of a bfloat16 wire are kept narrowed, a chunk with a
// value beyond its range in float32 (copy_behind.h): the operations redone
// from them give the same bits.
TEST_F(WireDtypeTest, AKilledReducerIsSurvivedWithTheSameBits) {
  Start(3);
  const auto tune = [](client::ClientOptions& o) {
    o.wire_dtype = DataType::kBfloat16;
    o.liveness_timeout = milliseconds(2000);
  };
  constexpr int kOps = 24;
  const auto reference = RunJob(Endpoints(), "failover-reference", tune, kOps, SizedBeyondBfloat16);
  const auto faulty = RunJob(Endpoints(), "failover", tune, kOps, SizedBeyondBfloat16, 8,
                             [&] { kill(reducers_[1]->pid(), SIGKILL); });
  ExpectDoubleRounded(DataType::kBfloat16, faulty, kOps, SizedBeyondBfloat16);
  for (uint32_t r = 0; r < kWireWorld; ++r) {
    EXPECT_EQ(faulty[r].results, reference[r].results) << "rank " << r;
    EXPECT_GE(faulty[r].stats.epoch, 1u) << "rank " << r << " never failed over";
  }
  EXPECT_GE(faulty[1].stats.wire_fallbacks, 8u) << "rank 1's Inf went as float32";
  EXPECT_GE(faulty[2].stats.wire_fallbacks, 8u) << "rank 2's float32 maximum went as float32";
}

}  // namespace
}  // namespace rs::testing
