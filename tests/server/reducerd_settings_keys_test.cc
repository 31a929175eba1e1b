// Every key reducerd declares is in its registry, so no read of a setting
// can abort the daemon (tests/support/setting_keys.h).
#include <gtest/gtest.h>

#include "server/reducerd_settings.h"
#include "tests/support/setting_keys.h"

namespace rs::server {
namespace {

TEST(ReducerdSettingKeys, EveryDeclaredKeyIsInTheRegistry) {
  rs::testing::ExpectAllInRegistry({"server/reducerd_settings.h"}, ReducerdSettings());
}

}  // namespace
}  // namespace rs::server
