// reducer-bench's command line: the client settings under the names reducerd
// and the NCCL plugin use, and the old names (--piece-bytes, --timeout,
// REDUCER_PIECE_BYTES, REDUCER_TIMEOUT) still accepted with one notice each.
#include "bench/bench_options.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rs::bench {
namespace {

using Vars = std::map<std::string, std::string>;

StatusOr<Options> Parse(std::vector<std::string> args, Vars env = {}) {
  args.insert(args.begin(), "reducer-bench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  env.try_emplace("REDUCER_ADDRS", "127.0.0.1:7450");
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(BenchOptions, ClientSettingsUseTheSharedNames) {
  StatusOr<Options> o = Parse({"--max-piece", "128K", "--min-piece", "16K", "--io-threads", "2", "--op-timeout",
                               "20s", "--connect-timeout", "5s"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->max_piece, 128u << 10);
  EXPECT_EQ(o->min_piece, 16u << 10);
  EXPECT_EQ(o->io_threads, 2);
  EXPECT_EQ(o->op_timeout.count(), 20'000);
  EXPECT_EQ(o->connect_timeout.count(), 5'000);
  EXPECT_TRUE(o->notices.empty());

  o = Parse({}, {{"REDUCER_MAX_PIECE", "256KiB"}, {"REDUCER_OP_TIMEOUT", "1m"}, {"REDUCER_STREAMS", "3"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->max_piece, 256u << 10);
  EXPECT_EQ(o->op_timeout.count(), 60'000);
  EXPECT_EQ(o->connect_timeout.count(), 90'000);
  EXPECT_EQ(o->streams, 3);
}

TEST(BenchOptions, WireDtypeByFlagOrVariable) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->wire, DataType::kFloat32);
  o = Parse({"--wire-dtype", "bfloat16"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->wire, DataType::kBfloat16);
  o = Parse({}, {{"REDUCER_WIRE_DTYPE", "float16"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->wire, DataType::kFloat16);
  o = Parse({"--wire-dtype", "float64"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("not one of off, bfloat16, float16"), std::string::npos) << o.status().message();
}

TEST(BenchOptions, OldPieceBytesStillWorksWithOneNotice) {
  StatusOr<Options> o = Parse({"--piece-bytes", "128K"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->max_piece, 128u << 10);
  EXPECT_EQ(o->notices, std::vector<std::string>{"--piece-bytes is deprecated; use --max-piece instead"});

  o = Parse({}, {{"REDUCER_PIECE_BYTES", "65536"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->max_piece, 65536u);
  EXPECT_EQ(o->notices,
            std::vector<std::string>{"REDUCER_PIECE_BYTES is deprecated; use REDUCER_MAX_PIECE instead"});
}

// The old --timeout set both limits and read a bare number as seconds; it
// still does.
TEST(BenchOptions, OldTimeoutSetsBothLimits) {
  StatusOr<Options> o = Parse({"--timeout", "40"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->op_timeout.count(), 40'000);
  EXPECT_EQ(o->connect_timeout.count(), 40'000);
  ASSERT_EQ(o->notices.size(), 1u);
  EXPECT_EQ(o->notices[0], "--timeout is deprecated; use --op-timeout and --connect-timeout instead");

  o = Parse({}, {{"REDUCER_TIMEOUT", "500ms"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->op_timeout.count(), 500);
  EXPECT_EQ(o->connect_timeout.count(), 500);
  ASSERT_EQ(o->notices.size(), 1u);
}

// Streams, piece size and send window left unset are the client's to choose
// (client/transport_plan.h); set, from a flag or a variable, they win.
TEST(BenchOptions, TransportSettingsUnsetMeanAutomatic) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->streams.has_value());
  EXPECT_FALSE(o->max_piece.has_value());
  EXPECT_FALSE(o->send_window.has_value());
  EXPECT_FALSE(o->write_slice.has_value());
  o = Parse({"--streams", "2", "--send-window", "0"}, {{"REDUCER_MAX_PIECE", "1MiB"}, {"REDUCER_WRITE_SLICE", "0"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->streams, 2);
  EXPECT_EQ(o->max_piece, 1u << 20);
  EXPECT_EQ(o->send_window, 0u);  // set to 0: no limit, not automatic
  EXPECT_EQ(o->write_slice, 0u);  // set to 0: whole batches, not automatic
}

TEST(BenchOptions, NewNameWinsOverOld) {
  StatusOr<Options> o = Parse({"--piece-bytes", "64K", "--max-piece", "256K"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->max_piece, 256u << 10);
  ASSERT_EQ(o->notices.size(), 1u);
  EXPECT_NE(o->notices[0].find("--piece-bytes is deprecated and was ignored: --max-piece takes precedence"),
            std::string::npos)
      << o->notices[0];

  o = Parse({}, {{"REDUCER_PIECE_BYTES", "65536"}, {"REDUCER_MAX_PIECE", "1MiB"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->max_piece, 1u << 20);
  ASSERT_EQ(o->notices.size(), 1u);
}

TEST(BenchOptions, BadValuesNameTheFlagOrVariable) {
  struct Case {
    std::vector<std::string> args;
    Vars env;
    std::string expect;
  };
  const Case cases[] = {
      {{"--op-timeout", "90"}, {}, "--op-timeout: '90' has no unit"},
      {{}, {{"REDUCER_CONNECT_TIMEOUT", "later"}}, "REDUCER_CONNECT_TIMEOUT: 'later' is not a duration (examples:"},
      {{}, {{"REDUCER_MAX_PIECE", "1K"}}, "REDUCER_MAX_PIECE: '1K' is below the minimum, 4 KiB"},
      {{"--piece-bytes", "huge"}, {}, "--piece-bytes: 'huge' is not a size (examples:"},
      {{}, {{"REDUCER_ADDRS", "nohost"}}, "REDUCER_ADDRS: reducer address 'nohost' is not HOST:PORT"},
      {{}, {{"REDUCER_ADDRS", ""}}, "--reducers (or REDUCER_ADDRS) is required"},
      {{"--rank", "4", "--world", "4"}, {}, "--rank 4 is not below --world 4"},
      {{}, {{"WORLD_SIZE", "0"}}, "WORLD_SIZE: 0 is outside [1, 65535]"},
  };
  for (const Case& c : cases) {
    StatusOr<Options> o = Parse(c.args, c.env);
    ASSERT_FALSE(o.ok()) << c.expect;
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.expect), std::string::npos) << o.status().message();
  }
}

}  // namespace
}  // namespace rs::bench
