// rs-train's registry names the client's settings as reducer-bench and the
// NCCL plugin do, and the table in docs/reference/settings.md is the registry's.
#include "trainer/config/trainer_settings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace rs::trainer {
namespace {

const SettingInfo* Find(const std::string& flag) {
  for (const SettingInfo& s : TrainerSettings()) {
    if (s.flag == flag) return &s;
  }
  return nullptr;
}

TEST(TrainerSettingsTest, TheClientsSettingsHaveTheProjectsNames) {
  const std::pair<const char*, const char*> names[] = {
      {"--streams", "REDUCER_STREAMS"},
      {"--max-piece", "REDUCER_MAX_PIECE"},
      {"--min-piece", "REDUCER_MIN_PIECE"},
      {"--send-window", "REDUCER_SEND_WINDOW"},
      {"--write-slice", "REDUCER_WRITE_SLICE"},
      {"--io-threads", "REDUCER_IO_THREADS"},
      {"--op-timeout", "REDUCER_OP_TIMEOUT"},
      {"--connect-timeout", "REDUCER_CONNECT_TIMEOUT"},
      {"--liveness-timeout", "REDUCER_LIVENESS_TIMEOUT"},
      {"--crc", "REDUCER_CRC"},
      {"--failover", "REDUCER_FAILOVER"},
      {"--min-reducers", "REDUCER_MIN_REDUCERS"},
      {"--retention", "REDUCER_RETENTION"},
  };
  for (const auto& [flag, env] : names) {
    const SettingInfo* s = Find(flag);
    ASSERT_NE(s, nullptr) << flag;
    EXPECT_EQ(s->env, env) << flag;
  }
  // No unit in any current name; the old ones live on only as aliases.
  std::set<std::string> seen;
  for (const SettingInfo& s : TrainerSettings()) {
    for (const std::string& name : {s.flag, s.env}) {
      if (name.empty()) continue;
      EXPECT_TRUE(seen.insert(name).second) << name << " twice";
      EXPECT_EQ(name.find("_MS"), std::string::npos) << name;
      EXPECT_EQ(name.find("BYTES"), std::string::npos) << name;
      EXPECT_EQ(name.find("bytes"), std::string::npos) << name;
    }
  }
  EXPECT_EQ(Find("--max-piece")->old_envs.at(0).name, "REDUCER_PIECE_BYTES");
  EXPECT_EQ(Find("--max-piece")->old_flags.at(0).name, "--piece-bytes");
  EXPECT_EQ(Find("--op-timeout")->old_envs.at(0).name, "REDUCER_OP_TIMEOUT_MS");
  EXPECT_EQ(Find("--op-timeout")->old_envs.at(0).bare_unit, "ms");
  EXPECT_EQ(Find("--op-timeout")->old_flags.at(0).name, "--timeout");
  EXPECT_EQ(Find("--connect-timeout")->old_envs.at(0).name, "REDUCER_CONNECT_TIMEOUT_MS");
  EXPECT_EQ(Find("--failover")->default_value, "1");
}

TEST(TrainerSettingsTest, TheReferenceTableIsTheRegistrys) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/docs/reference/settings.md");
  ASSERT_TRUE(in) << "docs/reference/settings.md not found";
  std::stringstream doc;
  doc << in.rdbuf();
  EXPECT_NE(doc.str().find(TrainerSettingsTable()), std::string::npos)
      << "docs/reference/settings.md's rs-train table differs from the registry; paste this under \"rs-train\":\n"
      << TrainerSettingsTable();
}

}  // namespace
}  // namespace rs::trainer
