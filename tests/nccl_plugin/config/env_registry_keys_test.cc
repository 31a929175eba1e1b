// Every key the NCCL plugin reads, its own and the client's, is in its
// registry, and a setting both declare is read as one type
// (tests/support/setting_keys.h).
#include <gtest/gtest.h>

#include "nccl_plugin/config/env_registry.h"
#include "tests/support/setting_keys.h"

namespace rs::plugin {
namespace {

const std::vector<std::string> kFiles = {"nccl_plugin/config/env_registry.h", "client/client_settings.h"};

TEST(EnvRegistryKeys, EveryDeclaredKeyIsInTheRegistry) {
  rs::testing::ExpectAllInRegistry(kFiles, PluginSettings());
}

TEST(EnvRegistryKeys, OneTypePerSetting) { rs::testing::ExpectOneTypePerSetting(kFiles); }

}  // namespace
}  // namespace rs::plugin
