// Every key rs-train reads, its own and the client's, is in its registry,
// and a setting both declare is read as one type
// (tests/support/setting_keys.h).
#include <gtest/gtest.h>

#include "trainer/config/trainer_settings.h"
#include "tests/support/setting_keys.h"

namespace rs::trainer {
namespace {

const std::vector<std::string> kFiles = {"trainer/config/trainer_settings.h", "client/client_settings.h"};

TEST(TrainerSettingKeys, EveryDeclaredKeyIsInTheRegistry) {
  rs::testing::ExpectAllInRegistry(kFiles, TrainerSettings());
}

TEST(TrainerSettingKeys, OneTypePerSetting) { rs::testing::ExpectOneTypePerSetting(kFiles); }

}  // namespace
}  // namespace rs::trainer
