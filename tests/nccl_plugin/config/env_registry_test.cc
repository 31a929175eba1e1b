// The environment registry: one list, defaults, strict parsing, the old
// names kept as deprecated aliases, and the reference table generated from it.
#include "nccl_plugin/config/env_registry.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/plugin_env.h"

namespace rs::plugin {
namespace {

TEST(EnvRegistry, EveryVariableIsDocumentedOnceWithItsPrefix) {
  std::set<std::string> names;
  for (const SettingInfo& v : PluginSettings()) {
    EXPECT_TRUE(names.insert(v.env).second) << v.env << " listed twice";
    EXPECT_TRUE(v.flag.empty()) << v.flag << ": the plugin has no command line";
    EXPECT_GT(v.doc.size(), 20u) << v.env << " has no real description";
    const std::string name = v.env;
    // NCCL's own variables are read only (NCCL_SOCKET_IFNAME as a fallback,
    // the CollNet switches, NCCL_ALGO and NCCL_TUNER_PLUGIN to warn when NCCL
    // will not use the reducers).
    EXPECT_TRUE(name.rfind("REDUCER_", 0) == 0 || name == "CLUSTER_SPEC" || name == "NCCL_SOCKET_IFNAME" ||
                name == "NCCL_COLLNET_ENABLE" || name == "NCCL_COLLNET_NODE_THRESHOLD" || name == "NCCL_ALGO" ||
                name == "NCCL_TUNER_PLUGIN")
        << name;
  }
  for (const char* required : {"REDUCER_ADDRS", "CLUSTER_SPEC", "REDUCER_JOB_TOKEN", "REDUCER_JOB_TOKEN_FILE",
                               "REDUCER_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "REDUCER_SOCKET_NTHREADS",
                               "REDUCER_NSOCKS_PERTHREAD", "REDUCER_STREAMS", "REDUCER_MAX_PIECE",
                               "REDUCER_MIN_PIECE", "REDUCER_OP_TIMEOUT", "REDUCER_CONNECT_TIMEOUT"}) {
    EXPECT_TRUE(names.count(required)) << required;
  }
  // One convention with reducerd and reducer-bench: the unit goes in the value.
  for (const std::string& name : names) {
    for (const char* suffix : {"_MS", "_BYTES", "_SECONDS"}) {
      EXPECT_FALSE(name.size() > std::string(suffix).size() &&
                   name.compare(name.size() - std::string(suffix).size(), std::string::npos, suffix) == 0)
          << name << " carries a unit in its name";
    }
  }
}

TEST(EnvRegistry, UnsetAndEmptyMeanDefault) {
  Env env = EnvOf({{"REDUCER_NSOCKS_PERTHREAD", ""}, {"REDUCER_IO_THREADS", ""}, {"REDUCER_STREAMS", ""}});
  EXPECT_FALSE(env.IsSet(setting::kSocksPerThread));
  EXPECT_EQ(env.Get(setting::kSocksPerThread), "2");
  EXPECT_EQ(*env.GetInt(setting::kSocksPerThread, 1, 16), 2);
  // No default: unset, the client library chooses (client/transport_plan.h,
  // common/host_capacity.h).
  EXPECT_FALSE(env.IsSet(setting::kIoThreads));
  EXPECT_FALSE(env.IsSet(setting::kStreams));
  EXPECT_EQ(env.Get(setting::kReducerAddrs), "");
  EXPECT_FALSE(env.IsSet(setting::kReducerAddrs));
}

TEST(EnvRegistry, ValuesAreTakenAsGiven) {
  Env env = EnvOf({{"REDUCER_ADDRS", "a:1,b:2"}, {"REDUCER_STREAMS", "8"}});
  EXPECT_TRUE(env.IsSet(setting::kReducerAddrs));
  EXPECT_EQ(env.Get(setting::kReducerAddrs), "a:1,b:2");
  EXPECT_EQ(*env.GetInt(setting::kStreams, 1, 64), 8);
}

TEST(EnvRegistry, BadIntegersNameTheVariable) {
  for (const char* bad : {"x", "8x", "1.5", "99999999999999999999999", " "}) {
    Env env = EnvOf({{"REDUCER_STREAMS", bad}});
    StatusOr<int64_t> v = env.GetInt(setting::kStreams, 1, 64);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), Code::kInvalidArgument);
    EXPECT_NE(v.status().message().find("REDUCER_STREAMS"), std::string::npos) << v.status().message();
  }
  Env env = EnvOf({{"REDUCER_STREAMS", "65"}});
  StatusOr<int64_t> v = env.GetInt(setting::kStreams, 1, 64);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("outside [1, 64]"), std::string::npos) << v.status().message();
}

TEST(EnvRegistry, MarkdownTableListsEveryVariableWithDefault) {
  const std::string table = EnvMarkdownTable();
  for (const SettingInfo& v : PluginSettings()) {
    EXPECT_NE(table.find("| `" + v.env + "` |"), std::string::npos) << v.env;
  }
  EXPECT_NE(table.find("| `REDUCER_RETENTION` | `256MiB` |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `REDUCER_MAX_PIECE` | (unset) |"), std::string::npos) << table;
  EXPECT_NE(table.find("Deprecated old name: `REDUCER_OP_TIMEOUT_MS`"), std::string::npos) << table;
}

TEST(EnvRegistry, SizesAndDurationsTakeUnits) {
  Env env = EnvOf({{"REDUCER_MAX_PIECE", "256KiB"}, {"REDUCER_OP_TIMEOUT", "2m"}});
  EXPECT_EQ(*env.GetSize(setting::kMaxPiece, 4096, 1 << 30), 256u << 10);
  EXPECT_EQ(env.GetDuration(setting::kOpTimeout, std::chrono::milliseconds(1), std::chrono::hours(24))->count(),
            120'000);
  // The defaults are written the same way.
  Env defaults = EnvOf({});
  EXPECT_EQ(*defaults.GetSize(setting::kRetention, 1, uint64_t{1} << 40), uint64_t{256} << 20);
  EXPECT_EQ(defaults.GetDuration(setting::kConnectTimeout, std::chrono::milliseconds(1), std::chrono::hours(24))
                ->count(),
            60'000);
}

// Each old name still works, with its old meaning, and yields exactly one
// notice that names the replacement.
TEST(EnvRegistry, OldNamesStillWorkAndAreNoticedOnce) {
  Env env = EnvOf({{"REDUCER_PIECE_BYTES", "131072"}, {"REDUCER_MIN_PIECE_BYTES", "8192"},
                   {"REDUCER_OP_TIMEOUT_MS", "20000"}, {"REDUCER_CONNECT_TIMEOUT_MS", "300"}});
  EXPECT_EQ(*env.GetSize(setting::kMaxPiece, 4096, 1 << 30), 131072u);
  EXPECT_EQ(*env.GetSize(setting::kMinPiece, 1, 1 << 30), 8192u);
  // *_MS values stay milliseconds.
  EXPECT_EQ(env.GetDuration(setting::kOpTimeout, std::chrono::milliseconds(1), std::chrono::hours(24))->count(),
            20'000);
  EXPECT_EQ(env.GetDuration(setting::kConnectTimeout, std::chrono::milliseconds(1), std::chrono::hours(24))
                ->count(),
            300);
  EXPECT_EQ(env.Source(setting::kOpTimeout), "REDUCER_OP_TIMEOUT_MS");
  ASSERT_EQ(env.notices().size(), 4u);
  const std::pair<const char*, const char*> renames[] = {{"REDUCER_PIECE_BYTES", "REDUCER_MAX_PIECE"},
                                                         {"REDUCER_MIN_PIECE_BYTES", "REDUCER_MIN_PIECE"},
                                                         {"REDUCER_OP_TIMEOUT_MS", "REDUCER_OP_TIMEOUT"},
                                                         {"REDUCER_CONNECT_TIMEOUT_MS", "REDUCER_CONNECT_TIMEOUT"}};
  for (const auto& [old_name, new_name] : renames) {
    int mentions = 0;
    for (const std::string& n : env.notices()) {
      if (n.rfind(std::string(old_name) + " is deprecated; use " + new_name + " instead", 0) == 0) ++mentions;
    }
    EXPECT_EQ(mentions, 1) << old_name;
  }
  EXPECT_TRUE(EnvOf({{"REDUCER_STREAMS", "3"}}).notices().empty());
}

TEST(EnvRegistry, NewNameWinsOverOldAndTheNoticeSaysSo) {
  Env env = EnvOf({{"REDUCER_OP_TIMEOUT", "45s"}, {"REDUCER_OP_TIMEOUT_MS", "1000"}});
  EXPECT_EQ(env.GetDuration(setting::kOpTimeout, std::chrono::milliseconds(1), std::chrono::hours(24))->count(),
            45'000);
  EXPECT_EQ(env.Source(setting::kOpTimeout), "REDUCER_OP_TIMEOUT");
  ASSERT_EQ(env.notices().size(), 1u);
  EXPECT_NE(env.notices()[0].find("REDUCER_OP_TIMEOUT_MS is deprecated and was ignored: REDUCER_OP_TIMEOUT takes "
                                  "precedence"),
            std::string::npos)
      << env.notices()[0];
}

// A bad value names the variable it came from and what was expected; a
// duration without a unit is refused rather than guessed.
TEST(EnvRegistry, BadSizesAndDurationsNameTheVariableAndFormat) {
  struct Case {
    const char* var;
    const char* value;
    SettingName key;
    const char* expect;
  };
  const Case cases[] = {
      {"REDUCER_MAX_PIECE", "big", setting::kMaxPiece, "REDUCER_MAX_PIECE: 'big' is not a size (examples:"},
      {"REDUCER_MAX_PIECE", "1K", setting::kMaxPiece, "REDUCER_MAX_PIECE: '1K' is below the minimum, 4 KiB"},
      {"REDUCER_PIECE_BYTES", "lots", setting::kMaxPiece, "REDUCER_PIECE_BYTES: 'lots' is not a size"},
      {"REDUCER_OP_TIMEOUT", "90", setting::kOpTimeout, "REDUCER_OP_TIMEOUT: '90' has no unit"},
      {"REDUCER_OP_TIMEOUT", "soon", setting::kOpTimeout, "REDUCER_OP_TIMEOUT: 'soon' is not a duration (examples:"},
      {"REDUCER_CONNECT_TIMEOUT_MS", "x", setting::kConnectTimeout,
       "REDUCER_CONNECT_TIMEOUT_MS: 'x' is not a duration"},
  };
  for (const Case& c : cases) {
    Env env = EnvOf({{c.var, c.value}});
    Status st = c.key.env == setting::kMaxPiece.env
                    ? env.GetSize(setting::kMaxPiece, 4096, 1 << 30).status()
                    : env.GetDuration(c.key.env == setting::kOpTimeout.env ? setting::kOpTimeout
                                                                            : setting::kConnectTimeout,
                                      std::chrono::milliseconds(1), std::chrono::hours(24))
                          .status();
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.var << "=" << c.value;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
  }
}

// The table in docs/reference/settings.md is generated from the registry
// (nccl_plugin_env_table); this catches a variable added to the code but not
// to the documentation.
TEST(EnvRegistry, ReferenceTableMatchesTheRegistry) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/docs/reference/settings.md");
  ASSERT_TRUE(in) << "docs/reference/settings.md not found";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find(EnvMarkdownTable()), std::string::npos)
      << "docs/reference/settings.md's NCCL plugin table differs from the registry; regenerate it with "
         "build/nccl_plugin/nccl_plugin_env_table and paste it under \"NCCL plugin\"";
}

}  // namespace
}  // namespace rs::plugin
