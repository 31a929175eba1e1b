// reducer-bench's command line: the client settings under the names reducerd
// and the NCCL plugin use, and the old names (--piece-bytes, --timeout,
// REDUCER_PIECE_BYTES, REDUCER_TIMEOUT) still accepted with one notice each.
#include "bench/bench_options.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/client_settings.h"
#include "tests/support/client_settings_sample.h"

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
  EXPECT_EQ(o->client.max_piece_bytes, 128u << 10);
  EXPECT_EQ(o->client.min_piece_bytes, 16u << 10);
  EXPECT_EQ(o->client.io_threads, 2);
  EXPECT_EQ(o->client.op_timeout.count(), 20'000);
  EXPECT_EQ(o->client.connect_timeout.count(), 5'000);
  EXPECT_TRUE(o->notices.empty());

  o = Parse({}, {{"REDUCER_MAX_PIECE", "256KiB"}, {"REDUCER_OP_TIMEOUT", "1m"}, {"REDUCER_STREAMS", "3"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 256u << 10);
  EXPECT_EQ(o->client.op_timeout.count(), 60'000);
  EXPECT_EQ(o->client.connect_timeout.count(), 90'000);
  EXPECT_EQ(o->client.streams_per_reducer, 3);
}

TEST(BenchOptions, WireDtypeByFlagOrVariable) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.wire_dtype, DataType::kFloat32);
  o = Parse({"--wire-dtype", "bfloat16"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.wire_dtype, DataType::kBfloat16);
  o = Parse({}, {{"REDUCER_WIRE_DTYPE", "float16"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.wire_dtype, DataType::kFloat16);
  o = Parse({"--wire-dtype", "float64"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("not one of off, bfloat16, float16"), std::string::npos) << o.status().message();
}

TEST(BenchOptions, VerboseAddsTheClientsInfoLinesOnlyWhenAsked) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->verbose);
  for (const char* flag : {"-v", "--verbose"}) {
    o = Parse({flag});
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_TRUE(o->verbose) << flag;
  }
}

TEST(BenchOptions, OpTimesAreOffByDefault) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->op_times);
  o = Parse({"--op-times"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->op_times);
}

TEST(BenchOptions, OldPieceBytesStillWorksWithOneNotice) {
  StatusOr<Options> o = Parse({"--piece-bytes", "128K"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 128u << 10);
  EXPECT_EQ(o->notices, std::vector<std::string>{"--piece-bytes is deprecated; use --max-piece instead"});

  o = Parse({}, {{"REDUCER_PIECE_BYTES", "65536"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 65536u);
  EXPECT_EQ(o->notices,
            std::vector<std::string>{"REDUCER_PIECE_BYTES is deprecated; use REDUCER_MAX_PIECE instead"});
}

// The old --timeout set both limits and read a bare number as seconds; it
// still does.
TEST(BenchOptions, OldTimeoutSetsBothLimits) {
  StatusOr<Options> o = Parse({"--timeout", "40"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.op_timeout.count(), 40'000);
  EXPECT_EQ(o->client.connect_timeout.count(), 40'000);
  ASSERT_EQ(o->notices.size(), 1u);
  EXPECT_EQ(o->notices[0], "--timeout is deprecated; use --op-timeout and --connect-timeout instead");

  o = Parse({}, {{"REDUCER_TIMEOUT", "500ms"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.op_timeout.count(), 500);
  EXPECT_EQ(o->client.connect_timeout.count(), 500);
  ASSERT_EQ(o->notices.size(), 1u);
}

// Streams, piece size and send window left unset are the client's to choose
// (client/transport_plan.h); set, from a flag or a variable, they win.
TEST(BenchOptions, TransportSettingsUnsetMeanAutomatic) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->client.streams_per_reducer.has_value());
  EXPECT_FALSE(o->client.max_piece_bytes.has_value());
  EXPECT_FALSE(o->client.send_window_bytes.has_value());
  EXPECT_FALSE(o->client.write_slice_bytes.has_value());
  o = Parse({"--streams", "2", "--send-window", "0"}, {{"REDUCER_MAX_PIECE", "1MiB"}, {"REDUCER_WRITE_SLICE", "0"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.streams_per_reducer, 2);
  EXPECT_EQ(o->client.max_piece_bytes, 1u << 20);
  EXPECT_EQ(o->client.send_window_bytes, 0u);  // set to 0: no limit, not automatic
  EXPECT_EQ(o->client.write_slice_bytes, 0u);  // set to 0: whole batches, not automatic
}

TEST(BenchOptions, NewNameWinsOverOld) {
  StatusOr<Options> o = Parse({"--piece-bytes", "64K", "--max-piece", "256K"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 256u << 10);
  ASSERT_EQ(o->notices.size(), 1u);
  EXPECT_NE(o->notices[0].find("--piece-bytes is deprecated and was ignored: --max-piece takes precedence"),
            std::string::npos)
      << o->notices[0];

  o = Parse({}, {{"REDUCER_PIECE_BYTES", "65536"}, {"REDUCER_MAX_PIECE", "1MiB"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->client.max_piece_bytes, 1u << 20);
  ASSERT_EQ(o->notices.size(), 1u);
}

// Every one of the client's shared settings (client/client_settings.h) is
// a flag and a variable here, and a value given reaches the client.
TEST(BenchOptions, EverySharedClientSettingReachesTheClient) {
  for (const client::ClientSetting& shared : client::ClientSettings()) {
    bool found = false;
    for (const SettingInfo& info : BenchSettings()) found |= info.flag == shared.info.flag && info.env == shared.info.env;
    EXPECT_TRUE(found) << shared.info.flag << " / " << shared.info.env;
  }
  Vars env;
  for (const auto& [name, value] : rs::testing::ClientSettingsSample()) env[name] = value;
  env["REDUCER_ADDRS"] = rs::testing::kSampleReducers;
  StatusOr<Options> o = Parse({}, env);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  rs::testing::ExpectClientSettingsSample(o->client);
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

// The table users read is the registry's: this catches a flag added to the
// code but not to docs/reference/settings.md, or the table edited by hand.
TEST(BenchOptions, TheReferenceTableIsTheRegistrys) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/docs/reference/settings.md");
  ASSERT_TRUE(in) << "docs/reference/settings.md not found";
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string table = SettingsMarkdownTable(BenchSettings(), 1);
  EXPECT_NE(doc.str().find(table), std::string::npos)
      << "docs/reference/settings.md's reducer-bench table differs from the registry; paste this under "
         "\"reducer-bench\":\n"
      << table;
}

}  // namespace
}  // namespace rs::bench
