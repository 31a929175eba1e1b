// Every key reducer-bench reads, its own and the client's, is in its
// registry, and a setting both declare is read as one type
// (tests/support/setting_keys.h).
#include <gtest/gtest.h>

#include "bench/bench_options.h"
#include "tests/support/setting_keys.h"

namespace rs::bench {
namespace {

const std::vector<std::string> kFiles = {"bench/bench_options.cc", "client/client_settings.h"};

TEST(BenchSettingKeys, EveryDeclaredKeyIsInTheRegistry) {
  rs::testing::ExpectAllInRegistry(kFiles, BenchSettings());
}

TEST(BenchSettingKeys, OneTypePerSetting) { rs::testing::ExpectOneTypePerSetting(kFiles); }

}  // namespace
}  // namespace rs::bench
