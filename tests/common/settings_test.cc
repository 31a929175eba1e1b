// The settings registry shared by reducerd and reducer-bench: where a value
// comes from (flag, old flag, variable, old variable, default), the notices
// for old names, the error messages, and the documentation table.
#include "common/settings.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace rs {
namespace {

using std::chrono::milliseconds;

const std::vector<SettingInfo>& Registry() {
  static const std::vector<SettingInfo> kRegistry = {
      {"--io-threads", "REDUCER_IO_THREADS", "N", "2", "", "I/O threads", {{"--threads"}}, {{"REDUCER_THREADS"}}},
      {"--op-timeout", "REDUCER_OP_TIMEOUT", "DUR", "90s", "", "operation timeout", {{"--timeout", "s"}},
       {{"REDUCER_OP_TIMEOUT_MS", "ms"}, {"REDUCER_TIMEOUT", "s"}}},
      {"--connect-timeout", "REDUCER_CONNECT_TIMEOUT", "DUR", "60s", "", "connect timeout", {{"--timeout", "s"}},
       {{"REDUCER_TIMEOUT", "s"}}},
      {"--max-piece", "REDUCER_MAX_PIECE", "SIZE", "1MiB", "", "largest piece", {}, {{"REDUCER_PIECE_BYTES"}}, 3},
      {"--log-level", "REDUCER_LOG_LEVEL", "L", "info", "", "log level", {}, {}, 2},
      {"", "REDUCER_JOB_TOKEN", "", "", "", "the token"},
  };
  return kRegistry;
}

Settings Resolve(const std::map<std::string, std::string>& flags, const std::map<std::string, std::string>& env) {
  return Settings::Resolve(Registry(), flags, [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

int64_t Ms(const Settings& s, const char* name) { return s.Duration(name, milliseconds(1), milliseconds::max())->count(); }

TEST(Settings, FlagThenVariableThenDefault) {
  Settings s = Resolve({}, {});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 2);
  EXPECT_TRUE(s.Get("--io-threads").is_default);
  EXPECT_EQ(s.Get("--io-threads").source, "default");
  EXPECT_TRUE(s.notices().empty());

  s = Resolve({}, {{"REDUCER_IO_THREADS", "5"}});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 5);
  EXPECT_EQ(s.Get("--io-threads").source, "REDUCER_IO_THREADS");

  s = Resolve({{"--io-threads", "7"}}, {{"REDUCER_IO_THREADS", "5"}});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 7);
  EXPECT_EQ(s.Get("--io-threads").source, "--io-threads");

  // Set but empty is unset, as for getenv users everywhere.
  s = Resolve({}, {{"REDUCER_IO_THREADS", ""}});
  EXPECT_TRUE(s.Get("--io-threads").is_default);
}

TEST(Settings, EnvironmentOnlySettingKeepsItsValueAsGiven) {
  Settings s = Resolve({}, {{"REDUCER_JOB_TOKEN", " s3cret "}});
  EXPECT_EQ(s.Get("REDUCER_JOB_TOKEN").text, " s3cret ");
  EXPECT_TRUE(s.IsSet("REDUCER_JOB_TOKEN"));
}

TEST(Settings, OldFlagAndOldVariableWorkWithOneNoticeEach) {
  Settings s = Resolve({{"--threads", "3"}}, {});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 3);
  EXPECT_EQ(s.Get("--io-threads").source, "--threads");
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0], "--threads is deprecated; use --io-threads instead");

  s = Resolve({}, {{"REDUCER_THREADS", "4"}});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 4);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0], "REDUCER_THREADS is deprecated; use REDUCER_IO_THREADS instead");
}

TEST(Settings, NewNameWinsAndTheNoticeSaysSo) {
  Settings s = Resolve({}, {{"REDUCER_IO_THREADS", "6"}, {"REDUCER_THREADS", "4"}});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 6);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0],
            "REDUCER_THREADS is deprecated and was ignored: REDUCER_IO_THREADS takes precedence (use "
            "REDUCER_IO_THREADS instead)");

  s = Resolve({{"--io-threads", "6"}, {"--threads", "4"}}, {});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 6);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_NE(s.notices()[0].find("--threads is deprecated and was ignored: --io-threads takes precedence"),
            std::string::npos);

  // A flag, even an old one, beats a variable, even a new one.
  s = Resolve({{"--threads", "4"}}, {{"REDUCER_IO_THREADS", "6"}});
  EXPECT_EQ(*s.Int("--io-threads", 1, 64), 4);
}

// An old *_MS name keeps reading a bare number as milliseconds; an old flag
// that took seconds keeps reading it as seconds; a value with a unit means
// what it says under any name.
TEST(Settings, OldNamesKeepTheirUnits) {
  EXPECT_EQ(Ms(Resolve({}, {{"REDUCER_OP_TIMEOUT_MS", "20000"}}), "--op-timeout"), 20'000);
  EXPECT_EQ(Ms(Resolve({}, {{"REDUCER_OP_TIMEOUT_MS", "2s"}}), "--op-timeout"), 2'000);
  EXPECT_EQ(Ms(Resolve({{"--timeout", "40"}}, {}), "--op-timeout"), 40'000);
  EXPECT_EQ(Ms(Resolve({}, {{"REDUCER_OP_TIMEOUT", "1.5m"}}), "--op-timeout"), 90'000);
  // The new name has no bare number to guess about.
  Settings s = Resolve({}, {{"REDUCER_OP_TIMEOUT", "20000"}});
  StatusOr<milliseconds> d = s.Duration("--op-timeout", milliseconds(1), milliseconds::max());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "REDUCER_OP_TIMEOUT: '20000' has no unit; durations need one (examples: 500ms, 30s, 2m)");
}

// reducer-bench's --timeout stood for two settings: it sets both and is
// reported once.
TEST(Settings, OneOldNameForTwoSettingsIsReportedOnce) {
  Settings s = Resolve({{"--timeout", "30s"}}, {});
  EXPECT_EQ(Ms(s, "--op-timeout"), 30'000);
  EXPECT_EQ(Ms(s, "--connect-timeout"), 30'000);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_EQ(s.notices()[0], "--timeout is deprecated; use --op-timeout and --connect-timeout instead");

  s = Resolve({{"--timeout", "30s"}, {"--op-timeout", "50s"}}, {});
  EXPECT_EQ(Ms(s, "--op-timeout"), 50'000);
  EXPECT_EQ(Ms(s, "--connect-timeout"), 30'000);
  ASSERT_EQ(s.notices().size(), 1u);
  EXPECT_NE(s.notices()[0].find("(ignored for --op-timeout: --op-timeout takes precedence)"), std::string::npos)
      << s.notices()[0];
}

TEST(Settings, BadValuesNameTheirSourceAndTheExpectedFormat) {
  Settings s = Resolve({{"--io-threads", "many"}}, {{"REDUCER_OP_TIMEOUT", "soon"}, {"REDUCER_PIECE_BYTES", "2K"},
                                                     {"REDUCER_LOG_LEVEL", "loud"}});
  EXPECT_EQ(s.Int("--io-threads", 1, 64).status().message(), "--io-threads: 'many' is not a whole number");
  EXPECT_EQ(s.Duration("--op-timeout", milliseconds(1), milliseconds::max()).status().message(),
            "REDUCER_OP_TIMEOUT: 'soon' is not a duration (examples: 500ms, 30s, 2m)");
  EXPECT_EQ(s.Size("--max-piece", 4096, 1 << 30).status().message(),
            "REDUCER_PIECE_BYTES: '2K' is below the minimum, 4 KiB");
  EXPECT_EQ(s.OneOf("--log-level", {"info", "debug"}).status().message(),
            "REDUCER_LOG_LEVEL: 'loud' is not one of info, debug");
  EXPECT_EQ(Resolve({}, {{"REDUCER_MAX_PIECE", "lots"}}).Size("--max-piece", 1, 1 << 30).status().message(),
            "REDUCER_MAX_PIECE: 'lots' is not a size (examples: 4096, 64KiB, 16MiB, 1G)");
  EXPECT_EQ(Resolve({{"--io-threads", "65"}}, {}).Int("--io-threads", 1, 64).status().message(),
            "--io-threads: 65 is outside [1, 64]");
  EXPECT_EQ(Resolve({}, {{"REDUCER_OP_TIMEOUT", "2d"}})
                .Duration("--op-timeout", milliseconds(1), milliseconds::max())
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(Resolve({}, {{"REDUCER_OP_TIMEOUT", "25h"}})
                .Duration("--op-timeout", milliseconds(1), std::chrono::hours(24))
                .status()
                .message(),
            "REDUCER_OP_TIMEOUT: '25h' is above the maximum, 24h");
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
