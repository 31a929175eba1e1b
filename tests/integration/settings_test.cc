// reducerd as users start it: an old flag still works and is reported once,
// as a warning in reducerd's own log; a bad value stops it at start (exit 2)
// with a message naming the flag and the format.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/built_programs.h"
#include "tests/support/test_cluster.h"

namespace rs::testing {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReducerdSettings, OldFlagWorksAndIsLoggedOnceAsAWarning) {
  ChildProcess reducer({kReducerd, "--listen", "127.0.0.1:0", "--threads", "3"});
  ASSERT_TRUE(reducer.WaitForOutput("reducerd listening on", std::chrono::seconds(20))) << reducer.Output();
  const std::string log = reducer.Output();
  EXPECT_NE(log.find(" 3 I/O threads"), std::string::npos) << log;
  EXPECT_EQ(Count(log, "--threads is deprecated; use --io-threads instead"), 1) << log;
  EXPECT_NE(log.find("warning reducerd: --threads is deprecated"), std::string::npos) << log;
  reducer.Kill();
}

TEST(ReducerdSettings, BadValueStopsItAtStartNamingTheFlag) {
  ChildProcess reducer({kReducerd, "--listen", "127.0.0.1:0", "--op-timeout", "90"});
  EXPECT_EQ(reducer.Wait(std::chrono::seconds(20)), 2);
  EXPECT_NE(reducer.Output().find("reducerd: --op-timeout: '90' has no unit; durations need one (examples: 500ms"),
            std::string::npos)
      << reducer.Output();
}

}  // namespace
}  // namespace rs::testing
