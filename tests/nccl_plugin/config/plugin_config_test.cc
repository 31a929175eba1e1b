// Reducer discovery (REDUCER_ADDRS, else CLUSTER_SPEC workerpool2), the job
// token, validation of the numeric settings, and their old names.
#include "nccl_plugin/config/plugin_config.h"

#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cstdio>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "client/client_settings.h"
#include "nccl_plugin/log.h"
#include "nccl_plugin/plugin.h"
#include "tests/support/client_settings_sample.h"
#include "tests/support/plugin_env.h"

namespace rs::plugin {
namespace {

std::string TempFile(const std::string& contents) {
  char path[] = "/tmp/rs_plugin_token_XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
  ::close(fd);
  return path;
}

TEST(CollNetConfig, NothingConfiguredMeansOffWithAReason) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->reducers.empty());
  EXPECT_FALSE(cfg->off_is_warning);
  EXPECT_NE(cfg->off_reason.find("REDUCER_ADDRS"), std::string::npos);
}

TEST(CollNetConfig, ReducerAddrs) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "10.0.0.1:7450, r2:7451,[::1]:9"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_EQ(cfg->reducers.size(), 3u);
  EXPECT_EQ(cfg->reducers[0].host, "10.0.0.1");
  EXPECT_EQ(cfg->reducers[0].port, 7450);
  EXPECT_EQ(cfg->reducers[1].host, "r2");
  EXPECT_EQ(cfg->reducers[2].host, "::1");
  EXPECT_EQ(cfg->reducers[2].port, 9);
  EXPECT_EQ(cfg->source, "REDUCER_ADDRS");
  // Unset: the client library chooses (client/transport_plan.h).
  EXPECT_FALSE(cfg->client.streams_per_reducer.has_value());
  EXPECT_FALSE(cfg->client.max_piece_bytes.has_value());
  EXPECT_EQ(cfg->client.op_timeout.count(), 90'000);
}

TEST(CollNetConfig, LivenessTimeoutTakesADurationOrZero) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->client.liveness_timeout.count(), 5'000);
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}, {"REDUCER_LIVENESS_TIMEOUT", "1500ms"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->client.liveness_timeout.count(), 1'500);
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}, {"REDUCER_LIVENESS_TIMEOUT", "0"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->client.liveness_timeout.count(), 0);
  for (const char* bad : {"5x", "10ms", "2d"}) {
    cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}, {"REDUCER_LIVENESS_TIMEOUT", bad}}));
    ASSERT_FALSE(cfg.ok()) << bad;
    EXPECT_NE(cfg.status().message().find("REDUCER_LIVENESS_TIMEOUT"), std::string::npos) << cfg.status().message();
  }
}

TEST(CollNetConfig, CrcIsOffUnlessTurnedOn) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->client.crc);
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}, {"REDUCER_CRC", "1"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(cfg->client.crc);
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}, {"REDUCER_CRC", "yes"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("REDUCER_CRC"), std::string::npos) << cfg.status().message();
}

TEST(CollNetConfig, WireDtypeIsOffUnlessSet) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->client.wire_dtype, DataType::kFloat32);
  for (const auto& [value, want] : {std::pair{"bfloat16", DataType::kBfloat16}, std::pair{"float16", DataType::kFloat16},
                                    std::pair{"off", DataType::kFloat32}}) {
    cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}, {"REDUCER_WIRE_DTYPE", value}}));
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    EXPECT_EQ(cfg->client.wire_dtype, want) << value;
  }
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "r:1"}, {"REDUCER_WIRE_DTYPE", "int8"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "REDUCER_WIRE_DTYPE='int8' is not one of off, bfloat16, float16");
}

TEST(CollNetConfig, FailoverSettings) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1,b:2,c:3"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(cfg->client.failover);
  EXPECT_EQ(cfg->client.min_reducers, 1u);
  EXPECT_EQ(cfg->client.retention_bytes, size_t{256} << 20);
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1,b:2,c:3"},
                                    {"REDUCER_FAILOVER", "0"},
                                    {"REDUCER_MIN_REDUCERS", "2"},
                                    {"REDUCER_RETENTION", "64MiB"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->client.failover);
  EXPECT_EQ(cfg->client.min_reducers, 2u);
  EXPECT_EQ(cfg->client.retention_bytes, size_t{64} << 20);
  // More than there are reducers, or a retention that is not a size.
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1,b:2,c:3"}, {"REDUCER_MIN_REDUCERS", "4"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("REDUCER_MIN_REDUCERS"), std::string::npos) << cfg.status().message();
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_RETENTION", "lots"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("REDUCER_RETENTION"), std::string::npos) << cfg.status().message();
}

// Every one of the client's shared settings (client/client_settings.h) is
// in the plugin's registry, with the shared default, and a value given
// reaches the client (REDUCER_SEND_WINDOW and REDUCER_WRITE_SLICE included).
TEST(CollNetConfig, EverySharedClientSettingReachesTheClient) {
  for (const client::ClientSetting& shared : client::ClientSettings()) {
    bool found = false;
    for (const SettingInfo& var : PluginSettings()) {
      if (shared.info.env != var.env) continue;
      found = true;
      EXPECT_EQ(shared.info.default_value, var.default_value) << var.env;
    }
    EXPECT_TRUE(found) << shared.info.env;
  }
  std::map<std::string, std::string> vars = rs::testing::ClientSettingsSample();
  vars["REDUCER_ADDRS"] = rs::testing::kSampleReducers;
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf(vars));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  rs::testing::ExpectClientSettingsSample(cfg->client);
  EXPECT_EQ(cfg->client.reducers.size(), 2u);
}

TEST(CollNetConfig, MalformedReducerAddrsIsAnError) {
  for (const char* bad : {"host", "host:", "host:0", "host:70000", ":5", "::1:5", "a:1,b"}) {
    StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", bad}}));
    ASSERT_FALSE(cfg.ok()) << bad;
    EXPECT_NE(cfg.status().message().find("REDUCER_ADDRS"), std::string::npos) << cfg.status().message();
  }
}

TEST(CollNetConfig, ReducerAddrsOverridesClusterSpec) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(
      EnvOf({{"REDUCER_ADDRS", "a:1"}, {"CLUSTER_SPEC", R"({"cluster":{"workerpool2":["b:2","c:3"]}})"}}));
  ASSERT_TRUE(cfg.ok());
  ASSERT_EQ(cfg->reducers.size(), 1u);
  EXPECT_EQ(cfg->reducers[0].host, "a");
}

TEST(CollNetConfig, ClusterSpecWorkerpool2) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf(
      {{"CLUSTER_SPEC", R"({"cluster":{"workerpool0":["w:2222"],"workerpool2":["r0:2222","r1:2223"]},"task":{"type":"workerpool0","index":0}})"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_EQ(cfg->reducers.size(), 2u);
  EXPECT_EQ(cfg->reducers[1].host, "r1");
  EXPECT_EQ(cfg->reducers[1].port, 2223);
  EXPECT_EQ(cfg->source, "CLUSTER_SPEC workerpool2");
}

// Vertex AI's shape: four pools (chief, GPU workers, reducers, evaluator),
// every replica as host:2222, this replica's own pool and index in "task".
// Whichever GPU replica reads it, the reducers are exactly workerpool2's
// entries, in their order: not the chief, the other workers or the evaluator.
TEST(CollNetConfig, VertexClusterSpecGivesExactlyThePool2Reducers) {
  const std::vector<std::string> pool2 = {"cmle-training-workerpool2-7f3a9c-0:2222",
                                          "cmle-training-workerpool2-7f3a9c-1:2222",
                                          "cmle-training-workerpool2-7f3a9c-2:2222"};
  for (const char* task : {R"("type": "workerpool0", "index": 0)", R"("type": "workerpool1", "index": 1)"}) {
    const std::string spec = std::string(R"({"cluster": {
      "workerpool0": ["cmle-training-workerpool0-7f3a9c-0:2222"],
      "workerpool1": ["cmle-training-workerpool1-7f3a9c-0:2222", "cmle-training-workerpool1-7f3a9c-1:2222"],
      "workerpool2": [")") + pool2[0] + R"(", ")" + pool2[1] + R"(", ")" + pool2[2] + R"("],
      "workerpool3": ["cmle-training-workerpool3-7f3a9c-0:2222"]},
      "environment": "cloud", "task": {)" + task + R"(, "trial": ""}, "job": {"worker_pool_specs": []}})";
    StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"CLUSTER_SPEC", spec}}));
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    std::vector<std::string> found;
    for (const client::Endpoint& e : cfg->reducers) found.push_back(e.ToString());
    EXPECT_EQ(found, pool2) << task;
    EXPECT_EQ(cfg->source, "CLUSTER_SPEC workerpool2");
  }
}

TEST(CollNetConfig, ClusterSpecWithoutReducersIsOff) {
  StatusOr<CollNetConfig> cfg =
      CollNetConfigFromEnv(EnvOf({{"CLUSTER_SPEC", R"({"cluster":{"workerpool0":["w:2222"]}})"}}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->reducers.empty());
  EXPECT_NE(cfg->off_reason.find("workerpool2"), std::string::npos);
}

TEST(CollNetConfig, UnreadableClusterSpecTurnsCollNetOffWithAWarning) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"CLUSTER_SPEC", "{\"cluster\": "}}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->reducers.empty());
  EXPECT_TRUE(cfg->off_is_warning);
  EXPECT_NE(cfg->off_reason.find("CLUSTER_SPEC"), std::string::npos);
}

TEST(CollNetConfig, BadWorkerpool2EntryIsAnError) {
  StatusOr<CollNetConfig> cfg =
      CollNetConfigFromEnv(EnvOf({{"CLUSTER_SPEC", R"({"cluster":{"workerpool2":["r0:2222","r1"]}})"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("'r1'"), std::string::npos) << cfg.status().message();
  cfg = CollNetConfigFromEnv(EnvOf({{"CLUSTER_SPEC", R"({"cluster":{"workerpool2":["a:1,b:2"]}})"}}));
  EXPECT_FALSE(cfg.ok());
}

TEST(CollNetConfig, JobTokenFromVariableOrFile) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_JOB_TOKEN", "s3cret"}}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->job_token, "s3cret");

  const std::string path = TempFile("from-file\n");
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_JOB_TOKEN_FILE", path}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->job_token, "from-file");
  // The variable wins over the file.
  cfg = CollNetConfigFromEnv(
      EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_JOB_TOKEN", "env"}, {"REDUCER_JOB_TOKEN_FILE", path}}));
  EXPECT_EQ(cfg->job_token, "env");
  std::remove(path.c_str());

  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_JOB_TOKEN_FILE", path}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find(path), std::string::npos);

  const std::string empty = TempFile(" \n");
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_JOB_TOKEN_FILE", empty}}));
  EXPECT_FALSE(cfg.ok());
  std::remove(empty.c_str());
}

TEST(CollNetConfig, NumericSettingsAreValidated) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf(
      {{"REDUCER_ADDRS", "a:1"}, {"REDUCER_STREAMS", "4"}, {"REDUCER_MAX_PIECE", "256KiB"},
       {"REDUCER_MIN_PIECE", "16K"}, {"REDUCER_OP_TIMEOUT", "5s"}, {"REDUCER_CONNECT_TIMEOUT", "7000ms"},
       {"REDUCER_IO_THREADS", "3"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->client.streams_per_reducer, 4);
  EXPECT_EQ(cfg->client.max_piece_bytes, 262144u);
  EXPECT_EQ(cfg->client.min_piece_bytes, 16384u);
  EXPECT_EQ(cfg->client.op_timeout.count(), 5000);
  EXPECT_EQ(cfg->client.connect_timeout.count(), 7000);
  EXPECT_EQ(cfg->client.io_threads, 3);
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_STREAMS", "0"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("REDUCER_STREAMS"), std::string::npos);
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_MAX_PIECE", "2KiB"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("REDUCER_MAX_PIECE"), std::string::npos) << cfg.status().message();
  cfg = CollNetConfigFromEnv(EnvOf({{"REDUCER_ADDRS", "a:1"}, {"REDUCER_OP_TIMEOUT", "5000"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("REDUCER_OP_TIMEOUT: '5000' has no unit"), std::string::npos)
      << cfg.status().message();
}

// Jobs written for the old names keep working unchanged.
TEST(CollNetConfig, OldNamesKeepTheirMeaning) {
  StatusOr<CollNetConfig> cfg = CollNetConfigFromEnv(EnvOf(
      {{"REDUCER_ADDRS", "a:1"}, {"REDUCER_STREAMS", "4"}, {"REDUCER_PIECE_BYTES", "262144"},
       {"REDUCER_MIN_PIECE_BYTES", "16384"}, {"REDUCER_OP_TIMEOUT_MS", "5000"},
       {"REDUCER_CONNECT_TIMEOUT_MS", "7000"}, {"REDUCER_IO_THREADS", "3"}}));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->client.max_piece_bytes, 262144u);
  EXPECT_EQ(cfg->client.min_piece_bytes, 16384u);
  EXPECT_EQ(cfg->client.op_timeout.count(), 5000);
  EXPECT_EQ(cfg->client.connect_timeout.count(), 7000);
  StatusOr<P2pConfig> p2p = P2pConfigFromEnv(EnvOf({{"REDUCER_CONNECT_TIMEOUT_MS", "300"}}));
  ASSERT_TRUE(p2p.ok());
  EXPECT_EQ(p2p->connect_timeout.count(), 300);
}

// The plugin tells the user, once, through NCCL's logger (WARN), about every
// old name it read.
std::vector<std::pair<LogLevel, std::string>>* g_lines = nullptr;
void Capture(LogLevel level, const char*, int, const char* message) { g_lines->emplace_back(level, message); }

TEST(CollNetConfig, PluginWarnsOnceAboutEachOldName) {
  std::vector<std::pair<LogLevel, std::string>> lines;
  g_lines = &lines;
  const LogSink previous = GetLogSink();
  SetLogSink(Capture);
  std::unique_ptr<Plugin> plugin = Plugin::Create(
      EnvOf({{"REDUCER_ADDRS", "127.0.0.1:1"}, {"REDUCER_OP_TIMEOUT_MS", "5000"}, {"REDUCER_PIECE_BYTES", "65536"},
             {"REDUCER_MAX_PIECE", "128K"}, {"REDUCER_SOCKET_IFNAME", "lo"}}),
      {});
  SetLogSink(previous);
  g_lines = nullptr;
  ASSERT_NE(plugin, nullptr);
  int op_timeout = 0, piece = 0;
  for (const auto& [level, text] : lines) {
    if (text.find("REDUCER_OP_TIMEOUT_MS is deprecated; use REDUCER_OP_TIMEOUT instead") != std::string::npos) {
      EXPECT_EQ(level, LogLevel::kWarn);
      ++op_timeout;
    }
    if (text.find("REDUCER_PIECE_BYTES is deprecated and was ignored: REDUCER_MAX_PIECE takes precedence") !=
        std::string::npos) {
      EXPECT_EQ(level, LogLevel::kWarn);
      ++piece;
    }
  }
  EXPECT_EQ(op_timeout, 1);
  EXPECT_EQ(piece, 1);
}

TEST(P2pConfig, InterfacePrecedenceAndSocketCounts) {
  StatusOr<P2pConfig> cfg = P2pConfigFromEnv(EnvOf({}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->ifname_spec, "");
  EXPECT_EQ(cfg->data_sockets(), 4);
  cfg = P2pConfigFromEnv(EnvOf({{"NCCL_SOCKET_IFNAME", "eth"}}));
  EXPECT_EQ(cfg->ifname_spec, "eth");
  EXPECT_EQ(cfg->ifname_source, "NCCL_SOCKET_IFNAME");
  cfg = P2pConfigFromEnv(EnvOf({{"NCCL_SOCKET_IFNAME", "eth"}, {"REDUCER_SOCKET_IFNAME", "=ens5"}}));
  EXPECT_EQ(cfg->ifname_spec, "=ens5");
  EXPECT_EQ(cfg->ifname_source, "REDUCER_SOCKET_IFNAME");
  cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_SOCKET_NTHREADS", "8"}, {"REDUCER_NSOCKS_PERTHREAD", "8"}}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->data_sockets(), 64);
  cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_SOCKET_NTHREADS", "16"}, {"REDUCER_NSOCKS_PERTHREAD", "5"}}));
  EXPECT_FALSE(cfg.ok());
  cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_SOCKET_NTHREADS", "0"}}));
  EXPECT_FALSE(cfg.ok());
}

// The point-to-point sockets' kernel timeouts follow REDUCER_LIVENESS_TIMEOUT,
// with the same rules as CollNet's.
TEST(P2pConfig, LivenessTimeoutDefaultsToFiveSecondsAndIsChecked) {
  StatusOr<P2pConfig> cfg = P2pConfigFromEnv(EnvOf({}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->liveness_timeout, std::chrono::seconds(5));
  cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_LIVENESS_TIMEOUT", "2s"}}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->liveness_timeout, std::chrono::seconds(2));
  cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_LIVENESS_TIMEOUT", "0"}}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->liveness_timeout.count(), 0);
  cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_LIVENESS_TIMEOUT", "50ms"}}));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("at least 100ms"), std::string::npos) << cfg.status().ToString();
}

// REDUCER_NIC_SPEED: what NCCL is told, with its unit; a bad value is an
// error for point-to-point naming the variable, never a silent guess.
TEST(P2pConfig, NicSpeedTakesAUnit) {
  StatusOr<P2pConfig> cfg = P2pConfigFromEnv(EnvOf({}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_FALSE(cfg->nic_speed_mbps.has_value());  // the interface's own
  const std::pair<const char*, int> good[] = {{"800Mbit", 800},   {"25Gbit", 25000}, {"1.5Gbit/s", 1500},
                                              {"100gbps", 100000}, {"2Tbit", 2000000}, {" 960 Mbit ", 960}};
  for (const auto& [text, mbps] : good) {
    cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_NIC_SPEED", text}}));
    ASSERT_TRUE(cfg.ok()) << text << ": " << cfg.status().ToString();
    EXPECT_EQ(cfg->nic_speed_mbps, mbps) << text;
  }
  const std::pair<const char*, const char*> bad[] = {{"100", "has no unit"},
                                                     {"fast", "is not a link speed"},
                                                     {"10GB", "unknown unit"},
                                                     {"0Mbit", "outside"},
                                                     {"0.4Mbit", "outside"},
                                                     {"3000Tbit", "outside"}};
  for (const auto& [text, why] : bad) {
    cfg = P2pConfigFromEnv(EnvOf({{"REDUCER_NIC_SPEED", text}}));
    ASSERT_FALSE(cfg.ok()) << text;
    EXPECT_EQ(cfg.status().code(), Code::kInvalidArgument);
    EXPECT_NE(cfg.status().message().find(std::string("REDUCER_NIC_SPEED: '")), std::string::npos)
        << cfg.status().ToString();
    EXPECT_NE(cfg.status().message().find(why), std::string::npos) << cfg.status().ToString();
  }
}

// NCCL's CollNet switches, read as NCCL 2.28 reads them (strtol, base 0).
TEST(NcclCollNetSettings, ReadAsNcclReadsThem) {
  NcclCollNetSettings s = NcclCollNetSettingsFromEnv(EnvOf({}));
  EXPECT_FALSE(s.enabled);  // NCCL's default: off
  EXPECT_EQ(s.enable_text, "");
  EXPECT_EQ(s.node_threshold, 2);
  for (const char* on : {"1", "0x1", "01", "1abc"}) {
    EXPECT_TRUE(NcclCollNetSettingsFromEnv(EnvOf({{"NCCL_COLLNET_ENABLE", on}})).enabled) << on;
  }
  for (const char* off : {"0", "2", "yes", "true", "-1"}) {
    s = NcclCollNetSettingsFromEnv(EnvOf({{"NCCL_COLLNET_ENABLE", off}}));
    EXPECT_FALSE(s.enabled) << off;
    EXPECT_EQ(s.enable_text, off);
  }
  EXPECT_EQ(NcclCollNetSettingsFromEnv(EnvOf({{"NCCL_COLLNET_NODE_THRESHOLD", "4"}})).node_threshold, 4);
  EXPECT_EQ(NcclCollNetSettingsFromEnv(EnvOf({{"NCCL_COLLNET_NODE_THRESHOLD", "0x10"}})).node_threshold, 16);
  // Overflow: NCCL keeps its default.
  EXPECT_EQ(NcclCollNetSettingsFromEnv(EnvOf({{"NCCL_COLLNET_NODE_THRESHOLD", "99999999999999999999"}}))
                .node_threshold,
            2);
}

}  // namespace
}  // namespace rs::plugin
