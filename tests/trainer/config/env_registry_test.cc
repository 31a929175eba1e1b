#include "trainer/config/env_registry.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace rs::trainer {
namespace {

TEST(TrainerEnvTest, ReadsOnlyTheRegisteredVariablesOnce) {
  std::map<std::string, std::string> vars = {{"RANK", "3"}, {"WORLD_SIZE", ""}, {"UNRELATED", "x"}};
  std::vector<std::string> asked;
  const TrainerEnv env = TrainerEnv::FromLookup([&](const char* name) -> const char* {
    asked.push_back(name);
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
  EXPECT_EQ(asked.size(), static_cast<size_t>(kNumEnvVars));
  vars["RANK"] = "changed later";
  EXPECT_EQ(env.Get(EnvKey::kRank), "3");       // a snapshot
  EXPECT_FALSE(env.IsSet(EnvKey::kWorldSize));  // empty counts as unset
  EXPECT_EQ(env.Get(EnvKey::kWorldSize), "");
  EXPECT_STREQ(env.Name(EnvKey::kReducerAddrs), "REDUCER_ADDRS");
}

TEST(TrainerEnvTest, TheReadmeTableIsTheRegistrys) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in) << "README.md not found";
  std::stringstream readme;
  readme << in.rdbuf();
  EXPECT_NE(readme.str().find(TrainerEnvMarkdownTable()), std::string::npos)
      << "README.md's rs-train environment table differs from the registry; paste this:\n"
      << TrainerEnvMarkdownTable();
}

}  // namespace
}  // namespace rs::trainer
