// Every key the Python package declares for its own registry (RANK,
// WORLD_SIZE, REDUCER_SESSION) is in that registry; the plugin's keys it
// reads are checked with the plugin's (tests/support/setting_keys.h).
#include <gtest/gtest.h>

#include "python/src/binding_settings.h"
#include "tests/support/setting_keys.h"

namespace rs::python {
namespace {

TEST(BindingSettingKeys, EveryDeclaredKeyIsInTheRegistry) {
  rs::testing::ExpectAllInRegistry({"python/src/binding_settings.cc"}, OwnRegistry());
}

}  // namespace
}  // namespace rs::python
