// The client's shared settings list (client/client_settings.h): every
// setting reaches ClientOptions, by flag and by variable; unset, each keeps
// the client's own default; a bad value is an error naming the setting.
// The front ends' tests (bench, trainer, plugin, Python) check the same
// sample through their own registries.
#include "client/client_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/client_settings_sample.h"

namespace rs::client {
namespace {

EnvLookup MapEnv(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// The list as an environment-only registry, as the plugin and the Python
// package hold it (settings are then named by their variable).
std::vector<SettingInfo> EnvOnly() {
  std::vector<SettingInfo> out = ClientSettingInfos();
  for (SettingInfo& info : out) {
    info.flag.clear();
    info.old_flags.clear();
  }
  return out;
}

ClientOptions TwoReducers() {
  ClientOptions o;
  o.reducers = *ParseEndpoints(rs::testing::kSampleReducers);
  return o;
}

TEST(ClientSettingsTest, TheSampleCoversEverySetting) {
  std::set<std::string> listed;
  for (const ClientSetting& s : ClientSettings()) {
    EXPECT_FALSE(s.info.flag.empty()) << s.info.env;
    EXPECT_EQ(s.info.env.rfind("REDUCER_", 0), 0u) << s.info.env;
    EXPECT_FALSE(s.info.doc.empty()) << s.info.env;
    listed.insert(s.info.env);
  }
  std::set<std::string> sampled;
  for (const auto& [name, value] : rs::testing::ClientSettingsSample()) sampled.insert(name);
  EXPECT_EQ(listed, sampled) << "tests/support/client_settings_sample.h must give every setting a value";
}

TEST(ClientSettingsTest, EverySettingReachesClientOptionsByVariable) {
  const Settings s = Settings::Resolve(EnvOnly(), {}, MapEnv(rs::testing::ClientSettingsSample()));
  ClientOptions o = TwoReducers();
  ASSERT_TRUE(ApplyClientSettings(s, &o).ok());
  rs::testing::ExpectClientSettingsSample(o);
}

TEST(ClientSettingsTest, EverySettingReachesClientOptionsByFlag) {
  std::map<std::string, std::string> given;
  for (const ClientSetting& s : ClientSettings()) {
    given[s.info.flag] = rs::testing::ClientSettingsSample().at(s.info.env);
  }
  const Settings s = Settings::Resolve(ClientSettingInfos(), given, MapEnv({}));
  ClientOptions o = TwoReducers();
  ASSERT_TRUE(ApplyClientSettings(s, &o).ok());
  rs::testing::ExpectClientSettingsSample(o);
}

// A front end that sets nothing hands the client its own defaults: the
// list's defaults and ClientOptions' cannot drift apart.
TEST(ClientSettingsTest, UnsetSettingsKeepTheClientsDefaults) {
  const Settings s = Settings::Resolve(EnvOnly(), {}, MapEnv({}));
  ClientOptions o = TwoReducers();
  ASSERT_TRUE(ApplyClientSettings(s, &o).ok());
  const ClientOptions want = TwoReducers();
  EXPECT_EQ(o.streams_per_reducer, want.streams_per_reducer);
  EXPECT_EQ(o.max_piece_bytes, want.max_piece_bytes);
  EXPECT_EQ(o.min_piece_bytes, want.min_piece_bytes);
  EXPECT_EQ(o.send_window_bytes, want.send_window_bytes);
  EXPECT_EQ(o.write_slice_bytes, want.write_slice_bytes);
  EXPECT_EQ(o.io_threads, want.io_threads);
  EXPECT_EQ(o.op_timeout, want.op_timeout);
  EXPECT_EQ(o.connect_timeout, want.connect_timeout);
  EXPECT_EQ(o.liveness_timeout, want.liveness_timeout);
  EXPECT_EQ(o.crc, want.crc);
  EXPECT_EQ(o.wire_dtype, want.wire_dtype);
  EXPECT_EQ(o.failover, want.failover);
  EXPECT_EQ(o.min_reducers, want.min_reducers);
  EXPECT_EQ(o.retention_bytes, want.retention_bytes);
  EXPECT_EQ(o.tls, want.tls);
  EXPECT_EQ(o.tcp.congestion, want.tcp.congestion);
  EXPECT_EQ(o.tcp.rto_min, want.tcp.rto_min);
  EXPECT_EQ(o.tcp_pacing, want.tcp_pacing);
}

TEST(ClientSettingsTest, BadValuesNameTheSettingAndWhatItTakes) {
  const struct {
    std::map<std::string, std::string> env;
    std::string expect;
  } cases[] = {
      {{{"REDUCER_LIVENESS_TIMEOUT", "50ms"}}, "REDUCER_LIVENESS_TIMEOUT='50ms': use 0 (off) or at least 100ms"},
      {{{"REDUCER_WIRE_DTYPE", "int8"}}, "REDUCER_WIRE_DTYPE='int8' is not one of off, bfloat16, float16"},
      {{{"REDUCER_MIN_REDUCERS", "3"}}, "REDUCER_MIN_REDUCERS='3' is more than the 2 reducers of REDUCER_ADDRS"},
      {{{"REDUCER_MAX_PIECE", "1K"}}, "REDUCER_MAX_PIECE: '1K' is below the minimum, 4 KiB"},
      {{{"REDUCER_SEND_WINDOW", "lots"}}, "REDUCER_SEND_WINDOW: 'lots' is not a size"},
      {{{"REDUCER_TCP_PACING", "on"}}, "REDUCER_TCP_PACING='on' is not one of auto, 1, 0"},
  };
  for (const auto& c : cases) {
    const Settings s = Settings::Resolve(EnvOnly(), {}, MapEnv(c.env));
    ClientOptions o = TwoReducers();
    const Status st = ApplyClientSettings(s, &o, "REDUCER_ADDRS");
    ASSERT_FALSE(st.ok()) << c.expect;
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_EQ(st.message().rfind(c.expect, 0), 0u) << st.message();
  }
}

// rs-train puts "CPU backend: " before most of them: the sentence goes on
// in lower case, acronyms stay.
TEST(ClientSettingsTest, APrefixLowersTheFirstWordButNotAnAcronym) {
  std::map<std::string, std::string> docs;
  for (const SettingInfo& info : ClientSettingInfos("CPU backend: ")) docs[info.env] = info.doc;
  EXPECT_EQ(docs["REDUCER_SEND_WINDOW"].rfind("CPU backend: bytes of pieces", 0), 0u) << docs["REDUCER_SEND_WINDOW"];
  EXPECT_EQ(docs["REDUCER_STREAMS"].rfind("CPU backend: TCP streams", 0), 0u) << docs["REDUCER_STREAMS"];
  EXPECT_EQ(docs["REDUCER_LIVENESS_TIMEOUT"].rfind("CPU backend: a reducer", 0), 0u);
}

TEST(ClientSettingsTest, OldNamesKeepTheirMeaning) {
  const Settings s = Settings::Resolve(
      EnvOnly(), {},
      MapEnv({{"REDUCER_OP_TIMEOUT_MS", "5000"}, {"REDUCER_PIECE_BYTES", "65536"}, {"REDUCER_MIN_PIECE_BYTES", "8K"}}));
  ClientOptions o = TwoReducers();
  ASSERT_TRUE(ApplyClientSettings(s, &o).ok());
  EXPECT_EQ(o.op_timeout, std::chrono::seconds(5));
  EXPECT_EQ(o.max_piece_bytes, size_t{65536});
  EXPECT_EQ(o.min_piece_bytes, size_t{8} << 10);
  EXPECT_EQ(s.notices().size(), 3u);
}

}  // namespace
}  // namespace rs::client
