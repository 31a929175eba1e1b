// The settings registry shared by reducerd and reducer-bench: where a value
// comes from (flag, old flag, variable, old variable, default), the notices
// for old names, the error messages, and the documentation table.
#include "common/settings.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace rs {
namespace {

using std::chrono::milliseconds;

// The settings of the registry below, as a program declares them.
inline constexpr SettingKey<int64_t> kIoThreads{"--io-threads", "REDUCER_IO_THREADS"};
inline constexpr SettingKey<milliseconds> kOpTimeout{"--op-timeout", "REDUCER_OP_TIMEOUT"};
inline constexpr SettingKey<milliseconds> kConnectTimeout{"--connect-timeout", "REDUCER_CONNECT_TIMEOUT"};
inline constexpr SettingKey<uint64_t> kMaxPiece{"--max-piece", "REDUCER_MAX_PIECE"};
inline constexpr SettingKey<std::string> kLogLevel{"--log-level", "REDUCER_LOG_LEVEL"};
inline constexpr SettingKey<std::string> kJobToken{"", "REDUCER_JOB_TOKEN"};

const std::vector<SettingInfo>& Registry() {
  static const std::vector<SettingInfo> kRegistry = {
      Entry(kIoThreads, "N", "2", "", "I/O threads", {{"--threads"}}, {{"REDUCER_THREADS"}}),
      Entry(kOpTimeout, "DUR", "90s", "", "operation timeout", {{"--timeout", "s"}},
       {{"REDUCER_OP_TIMEOUT_MS", "ms"}, {"REDUCER_TIMEOUT", "s"}}),
      Entry(kConnectTimeout, "DUR", "60s", "", "connect timeout", {{"--timeout", "s"}},
       {{"REDUCER_TIMEOUT", "s"}}),
      Entry(kMaxPiece, "SIZE", "1MiB", "", "largest piece", {}, {{"REDUCER_PIECE_BYTES"}}, 3),
      Entry(kLogLevel, "L", "info", "", "log level", {}, {}, 2),
      Entry(kJobToken, "", "", "", "the token"),
  };
  return kRegistry;
}

Settings Resolve(const std::map<std::string, std::string>& flags, const std::map<std::string, std::string>& env) {
  return Settings::Resolve(Registry(), flags, [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

int64_t Ms(const Settings& s, const SettingKey<milliseconds>& key) {
  return s.Duration(key, milliseconds(1), milliseconds::max())->count();
}

TEST(Settings, FlagThenVariableThenDefault) {
  Settings s = Resolve({}, {});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 2);
  EXPECT_TRUE(s.Get(kIoThreads).is_default);
  EXPECT_EQ(s.Get(kIoThreads).source, "default");
  EXPECT_TRUE(s.notices().empty());

  s = Resolve({}, {{"REDUCER_IO_THREADS", "5"}});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 5);
  EXPECT_EQ(s.Get(kIoThreads).source, "REDUCER_IO_THREADS");

  s = Resolve({{"--io-threads", "7"}}, {{"REDUCER_IO_THREADS", "5"}});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 7);
  EXPECT_EQ(s.Get(kIoThreads).source, "--io-threads");

  // Set but empty is unset, as for getenv users everywhere.
  s = Resolve({}, {{"REDUCER_IO_THREADS", ""}});
  EXPECT_TRUE(s.Get(kIoThreads).is_default);
}

TEST(Settings, EnvironmentOnlySettingKeepsItsValueAsGiven) {
  Settings s = Resolve({}, {{"REDUCER_JOB_TOKEN", " s3cret "}});
  EXPECT_EQ(s.Get(kJobToken).text, " s3cret ");
  EXPECT_TRUE(s.IsSet(kJobToken));
}

TEST(Settings, OldFlagAndOldVariableWorkWithOneNoticeEach) {
  Settings s = Resolve({{"--threads", "3"}}, {});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 3);
  EXPECT_EQ(s.Get(kIoThreads).source, "--threads");
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0], "--threads is deprecated; use --io-threads instead");

  s = Resolve({}, {{"REDUCER_THREADS", "4"}});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 4);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0], "REDUCER_THREADS is deprecated; use REDUCER_IO_THREADS instead");
}

TEST(Settings, NewNameWinsAndTheNoticeSaysSo) {
  Settings s = Resolve({}, {{"REDUCER_IO_THREADS", "6"}, {"REDUCER_THREADS", "4"}});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 6);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0],
            "REDUCER_THREADS is deprecated and was ignored: REDUCER_IO_THREADS takes precedence (use "
            "REDUCER_IO_THREADS instead)");

  s = Resolve({{"--io-threads", "6"}, {"--threads", "4"}}, {});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 6);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_NE(s.notices()[0].find("--threads is deprecated and was ignored: --io-threads takes precedence"),
            std::string::npos);

  // A flag, even an old one, beats a variable, even a new one.
  s = Resolve({{"--threads", "4"}}, {{"REDUCER_IO_THREADS", "6"}});
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 4);
}

// An old *_MS name keeps reading a bare number as milliseconds; an old flag
// that took seconds keeps reading it as seconds; a value with a unit means
// what it says under any name.
TEST(Settings, OldNamesKeepTheirUnits) {
  EXPECT_EQ(Ms(Resolve({}, {{"REDUCER_OP_TIMEOUT_MS", "20000"}}), kOpTimeout), 20'000);
  EXPECT_EQ(Ms(Resolve({}, {{"REDUCER_OP_TIMEOUT_MS", "2s"}}), kOpTimeout), 2'000);
  EXPECT_EQ(Ms(Resolve({{"--timeout", "40"}}, {}), kOpTimeout), 40'000);
  EXPECT_EQ(Ms(Resolve({}, {{"REDUCER_OP_TIMEOUT", "1.5m"}}), kOpTimeout), 90'000);
  // The new name has no bare number to guess about.
  Settings s = Resolve({}, {{"REDUCER_OP_TIMEOUT", "20000"}});
  StatusOr<milliseconds> d = s.Duration(kOpTimeout, milliseconds(1), milliseconds::max());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "REDUCER_OP_TIMEOUT: '20000' has no unit; durations need one (examples: 500ms, 30s, 2m)");
}

// reducer-bench's --timeout stood for two settings: it sets both and is
// reported once.
TEST(Settings, OneOldNameForTwoSettingsIsReportedOnce) {
  Settings s = Resolve({{"--timeout", "30s"}}, {});
  EXPECT_EQ(Ms(s, kOpTimeout), 30'000);
  EXPECT_EQ(Ms(s, kConnectTimeout), 30'000);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0], "--timeout is deprecated; use --op-timeout and --connect-timeout instead");

  s = Resolve({{"--timeout", "30s"}, {"--op-timeout", "50s"}}, {});
  EXPECT_EQ(Ms(s, kOpTimeout), 50'000);
  EXPECT_EQ(Ms(s, kConnectTimeout), 30'000);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_NE(s.notices()[0].find("(ignored for --op-timeout: --op-timeout takes precedence)"), std::string::npos)
      << s.notices()[0];
}

TEST(Settings, BadValuesNameTheirSourceAndTheExpectedFormat) {
  Settings s = Resolve({{"--io-threads", "many"}}, {{"REDUCER_OP_TIMEOUT", "soon"}, {"REDUCER_PIECE_BYTES", "2K"},
                                                     {"REDUCER_LOG_LEVEL", "loud"}});
  EXPECT_EQ(s.Int(kIoThreads, 1, 64).status().message(), "--io-threads: 'many' is not a whole number");
  EXPECT_EQ(s.Duration(kOpTimeout, milliseconds(1), milliseconds::max()).status().message(),
            "REDUCER_OP_TIMEOUT: 'soon' is not a duration (examples: 500ms, 30s, 2m)");
  EXPECT_EQ(s.Size(kMaxPiece, 4096, 1 << 30).status().message(),
            "REDUCER_PIECE_BYTES: '2K' is below the minimum, 4 KiB");
  EXPECT_EQ(s.OneOf(kLogLevel, {"info", "debug"}).status().message(),
            "REDUCER_LOG_LEVEL: 'loud' is not one of info, debug");
  EXPECT_EQ(Resolve({}, {{"REDUCER_MAX_PIECE", "lots"}}).Size(kMaxPiece, 1, 1 << 30).status().message(),
            "REDUCER_MAX_PIECE: 'lots' is not a size (examples: 4096, 64KiB, 16MiB, 1G)");
  EXPECT_EQ(Resolve({{"--io-threads", "65"}}, {}).Int(kIoThreads, 1, 64).status().message(),
            "--io-threads: 65 is outside [1, 64]");
  EXPECT_EQ(Resolve({}, {{"REDUCER_OP_TIMEOUT", "2d"}})
                .Duration(kOpTimeout, milliseconds(1), milliseconds::max())
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Resolve({}, {{"REDUCER_OP_TIMEOUT", "25h"}})
                .Duration(kOpTimeout, milliseconds(1), std::chrono::hours(24))
                .status()
                .message(),
            "REDUCER_OP_TIMEOUT: '25h' is above the maximum, 24h");
}

// A key carries its value's type: a value is read only as that type, and a
// bare name is not a key.
template <typename Key>
constexpr bool kReadsAsInt = requires(const Settings& s, const Key& key) { s.Int(key, 0, 1); };
template <typename Key>
constexpr bool kReadsAsDuration =
    requires(const Settings& s, const Key& key) { s.Duration(key, milliseconds(0), milliseconds(1)); };
static_assert(kReadsAsInt<SettingKey<int64_t>>);
static_assert(!kReadsAsInt<SettingKey<milliseconds>>);
static_assert(!kReadsAsInt<SettingKey<uint64_t>>);
static_assert(!kReadsAsInt<const char*>);
static_assert(kReadsAsDuration<SettingKey<milliseconds>>);
static_assert(!kReadsAsDuration<SettingKey<int64_t>>);
static_assert(!kReadsAsDuration<std::string_view>);

// A registry may hold a setting by its variable alone (the NCCL plugin holds
// the client's so): the same key reads it there.
TEST(Settings, AKeyReadsAnEnvironmentOnlyCopyOfItsSetting) {
  std::vector<SettingInfo> env_only = Registry();
  for (SettingInfo& info : env_only) info.flag.clear();
  const Settings s = Settings::Resolve(env_only, {}, [](const char* name) -> const char* {
    return std::string_view(name) == "REDUCER_OP_TIMEOUT" ? "2m" : nullptr;
  });
  EXPECT_EQ(Ms(s, kOpTimeout), 120'000);
  EXPECT_EQ(s.Get(kOpTimeout).source, "REDUCER_OP_TIMEOUT");
  EXPECT_EQ(*s.Int(kIoThreads, 1, 64), 2);
  EXPECT_EQ(FindSetting(env_only, kMaxPiece).env, "REDUCER_MAX_PIECE");
  EXPECT_EQ(FindSetting(Registry(), kMaxPiece).flag, "--max-piece");
}

TEST(Settings, MarkdownTableShowsOneTableWithOldNames) {
  const std::string readme = SettingsMarkdownTable(Registry(), 1);
  EXPECT_EQ(readme.rfind("| flag | environment | default | meaning |\n|---|---|---|---|\n", 0), 0u) << readme;
  EXPECT_NE(readme.find("| `--io-threads N` | `REDUCER_IO_THREADS` | `2` | I/O threads; deprecated old names: "
                        "`--threads`, `REDUCER_THREADS` |"),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find("| (none) | `REDUCER_JOB_TOKEN` | none | the token |"), std::string::npos) << readme;
  EXPECT_EQ(readme.find("--log-level"), std::string::npos) << "listed only in table 2";
  const std::string other = SettingsMarkdownTable(Registry(), 2);
  EXPECT_NE(other.find("--log-level"), std::string::npos);
  EXPECT_NE(other.find("--max-piece"), std::string::npos) << "listed in both";
  EXPECT_EQ(other.find("--io-threads"), std::string::npos);
}

}  // namespace
}  // namespace rs
