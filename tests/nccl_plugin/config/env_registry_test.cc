// The environment registry: one list, defaults, strict integer parsing, and
// the README table generated from it.
#include "nccl_plugin/config/env_registry.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

namespace rs::plugin {
namespace {

Env EnvOf(const std::map<std::string, std::string>& vars) {
  return Env::FromLookup([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(EnvRegistry, EveryVariableIsDocumentedOnceWithItsPrefix) {
  std::set<std::string> names;
  for (const EnvVarInfo& v : EnvVars()) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name << " listed twice";
    EXPECT_GT(std::string(v.doc).size(), 20u) << v.name << " has no real description";
    const std::string name = v.name;
    EXPECT_TRUE(name.rfind("REDUCER_", 0) == 0 || name == "CLUSTER_SPEC" || name == "NCCL_SOCKET_IFNAME") << name;
  }
  for (const char* required : {"REDUCER_ADDRS", "CLUSTER_SPEC", "REDUCER_JOB_TOKEN", "REDUCER_JOB_TOKEN_FILE",
                               "REDUCER_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "REDUCER_SOCKET_NTHREADS",
                               "REDUCER_NSOCKS_PERTHREAD", "REDUCER_STREAMS", "REDUCER_PIECE_BYTES",
                               "REDUCER_OP_TIMEOUT_MS", "REDUCER_CONNECT_TIMEOUT_MS"}) {
    EXPECT_TRUE(names.count(required)) << required;
  }
}

TEST(EnvRegistry, UnsetAndEmptyMeanDefault) {
  Env env = EnvOf({{"REDUCER_STREAMS", ""}});
  EXPECT_FALSE(env.IsSet(EnvKey::kStreams));
  EXPECT_EQ(env.Get(EnvKey::kStreams), "2");
  EXPECT_EQ(*env.GetInt(EnvKey::kStreams, 1, 64), 2);
  EXPECT_EQ(env.Get(EnvKey::kReducerAddrs), "");
  EXPECT_FALSE(env.IsSet(EnvKey::kReducerAddrs));
}

TEST(EnvRegistry, ValuesAreTakenAsGiven) {
  Env env = EnvOf({{"REDUCER_ADDRS", "a:1,b:2"}, {"REDUCER_STREAMS", "8"}});
  EXPECT_TRUE(env.IsSet(EnvKey::kReducerAddrs));
  EXPECT_EQ(env.Get(EnvKey::kReducerAddrs), "a:1,b:2");
  EXPECT_EQ(*env.GetInt(EnvKey::kStreams, 1, 64), 8);
}

TEST(EnvRegistry, BadIntegersNameTheVariable) {
  for (const char* bad : {"x", "8x", "1.5", "99999999999999999999999", " "}) {
    Env env = EnvOf({{"REDUCER_STREAMS", bad}});
    StatusOr<int64_t> v = env.GetInt(EnvKey::kStreams, 1, 64);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), Code::kInvalidArgument);
    EXPECT_NE(v.status().message().find("REDUCER_STREAMS"), std::string::npos) << v.status().message();
  }
  Env env = EnvOf({{"REDUCER_STREAMS", "65"}});
  StatusOr<int64_t> v = env.GetInt(EnvKey::kStreams, 1, 64);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("outside [1, 64]"), std::string::npos) << v.status().message();
}

TEST(EnvRegistry, MarkdownTableListsEveryVariableWithDefault) {
  const std::string table = EnvMarkdownTable();
  for (const EnvVarInfo& v : EnvVars()) {
    EXPECT_NE(table.find(std::string("| `") + v.name + "` |"), std::string::npos) << v.name;
  }
  EXPECT_NE(table.find("| `REDUCER_PIECE_BYTES` | `1048576` |"), std::string::npos) << table;
}

// The README section is generated from the registry (nccl_plugin_env_table);
// this catches a variable added to the code but not to the documentation.
TEST(EnvRegistry, ReadmeSectionMatchesTheRegistry) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in) << "README.md not found";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find(EnvMarkdownTable()), std::string::npos)
      << "regenerate the table with nccl_plugin_env_table";
}

}  // namespace
}  // namespace rs::plugin
