// Every key the client's shared settings declare is in their list, which
// each front end appends to its registry (tests/support/setting_keys.h).
#include <gtest/gtest.h>

#include "client/client_settings.h"
#include "tests/support/setting_keys.h"

namespace rs::client {
namespace {

TEST(ClientSettingKeys, EveryDeclaredKeyIsInTheSharedList) {
  rs::testing::ExpectAllInRegistry({"client/client_settings.h"}, ClientSettingInfos());
}

}  // namespace
}  // namespace rs::client
