// reducerd's options: the documented defaults, flags over environment, the
// old names (--threads, REDUCER_THREADS) kept as deprecated aliases, error
// messages that name the flag or variable, and the documentation tables
// generated from the registry.
#include "server/options.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/host_capacity.h"

#include "server/core/session.h"
#include "server/reducerd_settings.h"

namespace rs::server {
namespace {

using Vars = std::map<std::string, std::string>;

StatusOr<Options> Parse(std::vector<std::string> args, const Vars& env = {}) {
  args.insert(args.begin(), "reducerd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReducerdOptions, DefaultsAreTheDocumentedOnes) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.listen_host, "0.0.0.0");
  EXPECT_EQ(o->net.listen_port, 7450);
  EXPECT_GE(o->net.io_threads, 1);
  EXPECT_LE(o->net.io_threads, kMaxAutoIoThreads);
  EXPECT_NE(o->io_threads_origin.find("automatic: "), std::string::npos) << o->io_threads_origin;
  EXPECT_EQ(o->net.memory_limit, size_t{1} << 30);
  EXPECT_EQ(o->net.max_piece_bytes, size_t{4} << 20);
  EXPECT_FALSE(o->net.result_part_bytes.has_value()) << "unset: each session's own, from its ranks";
  EXPECT_EQ(o->net.whole_pieces_from, 64u);
  EXPECT_EQ(o->net.op_timeout.count(), 60'000);
  EXPECT_EQ(o->net.join_timeout.count(), 300'000);
  EXPECT_EQ(o->net.idle_timeout.count(), 900'000);
  EXPECT_EQ(o->drain_timeout.count(), 30'000);
  EXPECT_EQ(o->control.drain_timeout.count(), 30'000);
  EXPECT_EQ(o->net.job_token, "");
  EXPECT_EQ(o->log_level, "info");
  EXPECT_EQ(o->log_format, "text");
  EXPECT_EQ(o->control.grpc_listen, "");
  EXPECT_EQ(o->control.metrics_max_sessions, 16u);
  EXPECT_FALSE(o->control.metrics_session_ids);  // ids are not handed to whoever scrapes
  EXPECT_TRUE(o->notices.empty());
}

// Each default is written once (server/core/server_defaults.h): what
// reducerd gets from its registry's texts is what the structs start from,
// so code and tests that build a struct by hand run with reducerd's values.
TEST(ReducerdOptions, TheRegistrysDefaultsAreTheStructsDefaults) {
  StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const ServerConfig net;
  EXPECT_EQ(o->net.memory_limit, net.memory_limit);
  EXPECT_EQ(o->net.max_piece_bytes, net.max_piece_bytes);
  EXPECT_EQ(o->net.result_part_bytes, net.result_part_bytes);
  EXPECT_EQ(o->net.whole_pieces_from, net.whole_pieces_from);
  EXPECT_EQ(o->net.op_timeout, net.op_timeout);
  EXPECT_EQ(o->net.join_timeout, net.join_timeout);
  EXPECT_EQ(o->net.handshake_timeout, net.handshake_timeout);
  EXPECT_EQ(o->net.idle_timeout, net.idle_timeout);
  EXPECT_EQ(o->net.crc, net.crc);
  EXPECT_EQ(o->net.tls, net.tls);
  const SessionLimits session;
  EXPECT_EQ(o->net.max_piece_bytes, session.max_piece_bytes);
  EXPECT_EQ(o->net.result_part_bytes, session.result_part_bytes);
  EXPECT_EQ(o->net.whole_pieces_from, session.whole_pieces_from);
  EXPECT_EQ(o->net.op_timeout, session.op_timeout);
  EXPECT_EQ(o->net.join_timeout, session.join_timeout);
  EXPECT_EQ(o->net.crc, session.crc);
  const AdmissionLimits admission;
  EXPECT_EQ(o->net.limits.max_connections, admission.max_connections);
  EXPECT_EQ(o->net.limits.max_connections_per_source, admission.max_connections_per_source);
  EXPECT_EQ(o->net.limits.max_handshakes_per_source, admission.max_handshakes_per_source);
  EXPECT_EQ(o->net.limits.max_pending_sessions, admission.max_pending_sessions);
  EXPECT_EQ(o->net.limits.max_pending_sessions_per_source, admission.max_pending_sessions_per_source);
  const ControlConfig control;
  EXPECT_EQ(o->control.metrics_max_sessions, control.metrics_max_sessions);
  EXPECT_EQ(o->control.metrics_max_ranks, control.metrics_max_ranks);
  EXPECT_EQ(o->control.metrics_session_ids, control.metrics_session_ids);
  EXPECT_EQ(o->control.drain_timeout, control.drain_timeout);
  const Options options;
  EXPECT_EQ(o->drain_timeout, options.drain_timeout);
  EXPECT_EQ(o->log_level, options.log_level);
  EXPECT_EQ(o->log_format, options.log_format);
}

TEST(ReducerdOptions, EnvironmentGivesDefaultsAndFlagsWin) {
  const Vars env = {{"REDUCER_LISTEN", "127.0.0.1:9000"}, {"REDUCER_IO_THREADS", "3"},
                    {"REDUCER_MAX_PIECE", "1MiB"},        {"REDUCER_OP_TIMEOUT", "90s"},
                    {"REDUCER_METRICS_LISTEN", "[::1]:0"}, {"REDUCER_LOG_FORMAT", "json"},
                    {"REDUCER_WHOLE_PIECES_FROM", "16"},  {"REDUCER_IDLE_TIMEOUT", "90s"}};
  StatusOr<Options> o = Parse({}, env);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.listen_port, 9000);
  EXPECT_EQ(o->net.io_threads, 3);
  EXPECT_EQ(o->net.max_piece_bytes, size_t{1} << 20);
  EXPECT_EQ(o->net.op_timeout.count(), 90'000);
  EXPECT_EQ(o->control.metrics_listen, "[::1]:0");
  EXPECT_EQ(o->log_format, "json");
  EXPECT_EQ(o->net.whole_pieces_from, 16u);
  EXPECT_EQ(o->net.idle_timeout.count(), 90'000);
  EXPECT_FALSE(o->net.result_part_bytes.has_value());
  o = Parse({"--io-threads", "5", "--op-timeout", "1500ms", "--whole-pieces-from", "0"},
            {{"REDUCER_RESULT_PART", "64KiB"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.result_part_bytes, size_t{64} << 10);
  o = Parse({"--result-part", "0"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.result_part_bytes, size_t{0}) << "0: whole pieces, not the automatic part";
  o = Parse({"--io-threads", "5", "--op-timeout", "1500ms", "--whole-pieces-from", "0"}, env);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.io_threads, 5);
  EXPECT_EQ(o->net.whole_pieces_from, 0u) << "0: parts for every operation";
  EXPECT_EQ(o->net.op_timeout.count(), 1'500);
}

// The token comes through the registry too (no getenv of its own): the
// variable when no file is given, the file when both are.
TEST(ReducerdOptions, JobTokenFromVariableOrFile) {
  StatusOr<Options> o = Parse({}, {{"REDUCER_JOB_TOKEN", "s3cret"}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->net.job_token, "s3cret");
  const std::string path = ::testing::TempDir() + "/reducerd_token";
  std::ofstream(path) << "from-file\n";
  o = Parse({"--job-token-file", path}, {{"REDUCER_JOB_TOKEN", "s3cret"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.job_token, "from-file");
  o = Parse({}, {{"REDUCER_JOB_TOKEN_FILE", path + ".missing"}});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("REDUCER_JOB_TOKEN_FILE"), std::string::npos) << o.status().message();
}

TEST(ReducerdOptions, OldThreadsNamesStillWorkWithOneNotice) {
  StatusOr<Options> o = Parse({"--threads", "3"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.io_threads, 3);
  EXPECT_EQ(o->notices, std::vector<std::string>{"--threads is deprecated; use --io-threads instead"});

  o = Parse({}, {{"REDUCER_THREADS", "4"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.io_threads, 4);
  EXPECT_EQ(o->notices, std::vector<std::string>{"REDUCER_THREADS is deprecated; use REDUCER_IO_THREADS instead"});
}

TEST(ReducerdOptions, NewNameWinsOverOld) {
  StatusOr<Options> o = Parse({}, {{"REDUCER_THREADS", "4"}, {"REDUCER_IO_THREADS", "2"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.io_threads, 2);
  ASSERT_EQ(o->notices.size(), 1u);
  EXPECT_NE(o->notices[0].find("REDUCER_THREADS is deprecated and was ignored: REDUCER_IO_THREADS takes precedence"),
            std::string::npos)
      << o->notices[0];
  o = Parse({"--threads", "4", "--io-threads", "2"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.io_threads, 2);
  ASSERT_EQ(o->notices.size(), 1u);
}

TEST(ReducerdOptions, BadValuesNameTheFlagOrVariableAndTheFormat) {
  struct Case {
    std::vector<std::string> args;
    Vars env;
    std::string expect;
  };
  const Case cases[] = {
      {{"--op-timeout", "90"}, {}, "--op-timeout: '90' has no unit; durations need one (examples: 500ms, 30s, 2m)"},
      {{}, {{"REDUCER_OP_TIMEOUT", "soon"}}, "REDUCER_OP_TIMEOUT: 'soon' is not a duration (examples:"},
      {{}, {{"REDUCER_JOIN_TIMEOUT", "0"}}, "REDUCER_JOIN_TIMEOUT: '0' is below the minimum, 1ms"},
      {{}, {{"REDUCER_MAX_PIECE", "1K"}}, "REDUCER_MAX_PIECE: '1K' is below the minimum, 4 KiB"},
      {{}, {{"REDUCER_MEMORY_LIMIT", "plenty"}}, "REDUCER_MEMORY_LIMIT: 'plenty' is not a size (examples:"},
      {{}, {{"REDUCER_THREADS", "0"}}, "REDUCER_THREADS: 0 is outside [1, 256]"},
      {{"--io-threads", "two"}, {}, "--io-threads: 'two' is not a whole number"},
      {{}, {{"REDUCER_LISTEN", "nowhere"}}, "REDUCER_LISTEN: 'nowhere' is not HOST:PORT"},
      {{"--grpc-listen", "x"}, {}, "--grpc-listen: 'x' is not HOST:PORT"},
      {{}, {{"REDUCER_LOG_LEVEL", "loud"}}, "REDUCER_LOG_LEVEL: 'loud' is not one of trace, debug, info, warn, error"},
      {{}, {{"REDUCER_METRICS_MAX_RANKS", "2000"}}, "REDUCER_METRICS_MAX_RANKS: 2000 is outside [0, 1024]"},
  };
  for (const Case& c : cases) {
    StatusOr<Options> o = Parse(c.args, c.env);
    ASSERT_FALSE(o.ok()) << c.expect;
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.expect), std::string::npos) << o.status().message();
  }
  // A drain may be cut to nothing.
  StatusOr<Options> o = Parse({"--drain-timeout", "0"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->drain_timeout.count(), 0);
}

// CLUSTER_SPEC as Vertex AI sets it on every replica of a custom job: four
// pools (the chief, GPU workers, reducers, an evaluator), each replica listed
// as host:2222, and this replica's own pool and index in "task".
std::string VertexSpec(const std::string& type, int index) {
  return R"({"cluster": {
    "workerpool0": ["cmle-training-workerpool0-7f3a9c-0:2222"],
    "workerpool1": ["cmle-training-workerpool1-7f3a9c-0:2222", "cmle-training-workerpool1-7f3a9c-1:2222"],
    "workerpool2": ["cmle-training-workerpool2-7f3a9c-0:2222", "cmle-training-workerpool2-7f3a9c-1:2223",
                    "cmle-training-workerpool2-7f3a9c-2:2222"],
    "workerpool3": ["cmle-training-workerpool3-7f3a9c-0:2222"]},
  "environment": "cloud",
  "task": {"type": ")" + type + R"(", "index": )" + std::to_string(index) + R"(, "trial": ""},
  "job": {"worker_pool_specs": [{"machine_spec": {"machine_type": "n1-highcpu-16"}, "replica_count": 3}]}})";
}

TEST(ReducerdOptions, VertexReducerListensOnItsOwnEntrysPort) {
  StatusOr<Options> o = Parse({}, {{"CLUSTER_SPEC", VertexSpec("workerpool2", 1)}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.listen_host, "0.0.0.0");
  EXPECT_EQ(o->net.listen_port, 2223);
  EXPECT_EQ(o->listen_origin, "CLUSTER_SPEC workerpool2[1] (cmle-training-workerpool2-7f3a9c-1:2223)");
  EXPECT_TRUE(o->notices.empty());

  o = Parse({}, {{"CLUSTER_SPEC", VertexSpec("workerpool2", 2)}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.listen_port, 2222);
}

TEST(ReducerdOptions, ListenFlagOrVariableWinsOverClusterSpec) {
  StatusOr<Options> o = Parse({"--listen", "127.0.0.1:9000"}, {{"CLUSTER_SPEC", VertexSpec("workerpool2", 1)}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.listen_port, 9000);
  EXPECT_EQ(o->listen_origin, "");
  o = Parse({}, {{"REDUCER_LISTEN", "127.0.0.1:9001"}, {"CLUSTER_SPEC", VertexSpec("workerpool2", 1)}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->net.listen_port, 9001);
  // Given an address, the reducer does not need the spec at all: a broken
  // one does not stop it.
  o = Parse({"--listen", "127.0.0.1:9000"}, {{"CLUSTER_SPEC", "{not json"}});
  EXPECT_TRUE(o.ok()) << o.status().ToString();
}

TEST(ReducerdOptions, ClusterSpecOfAnotherPoolKeepsTheDefaultWithANotice) {
  for (const char* pool : {"workerpool0", "workerpool1", "workerpool3"}) {
    StatusOr<Options> o = Parse({}, {{"CLUSTER_SPEC", VertexSpec(pool, 0)}});
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(o->net.listen_port, 7450) << pool;
    ASSERT_EQ(o->notices.size(), 1u) << pool;
    EXPECT_EQ(o->notices[0], std::string("CLUSTER_SPEC: this replica is ") + pool +
                                 "[0], not a reducer (workerpool2); listening on the default 0.0.0.0:7450");
  }
}

TEST(ReducerdOptions, UnusableClusterSpecIsAnErrorNamingIt) {
  struct Case {
    std::string spec;
    std::string expected;
  };
  const Case cases[] = {
      {"{\"cluster\": ", "CLUSTER_SPEC"},
      {VertexSpec("workerpool2", 3),
       "CLUSTER_SPEC: this replica is workerpool2[3] but cluster.workerpool2 has 3 entries, so its port is unknown; "
       "give --listen or REDUCER_LISTEN"},
      {R"({"cluster": {"workerpool2": ["r0"]}, "task": {"type": "workerpool2", "index": 0}})",
       "CLUSTER_SPEC: cluster.workerpool2[0]: "},
  };
  for (const Case& c : cases) {
    StatusOr<Options> o = Parse({}, {{"CLUSTER_SPEC", c.spec}});
    ASSERT_FALSE(o.ok()) << c.spec;
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(o.status().message().rfind(c.expected, 0), 0u) << o.status().message();
  }
}

TEST(ReducerdOptions, UnknownFlagIsAUsageError) {
  StatusOr<Options> o = Parse({"--no-such-flag", "1"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
  EXPECT_NE(o.status().message().find("--no-such-flag"), std::string::npos) << o.status().message();
}

// The tables users read (docs/reference/settings.md) are generated from the
// registry (reducerd_settings_table); this catches a flag added to the code
// but not to the documentation, or a table edited by hand.
TEST(ReducerdOptions, DataPlaneTableMatchesTheRegistry) {
  EXPECT_NE(ReadSource("docs/reference/settings.md").find(SettingsMarkdownTable(ReducerdSettings(), kReadmeTable)),
            std::string::npos)
      << "docs/reference/settings.md's reducerd data-plane table differs from the registry; regenerate it with "
         "build/server/reducerd_settings_table and paste it under \"reducerd\"";
}

TEST(ReducerdOptions, ControlPlaneTableMatchesTheRegistry) {
  EXPECT_NE(ReadSource("docs/reference/settings.md")
                .find(SettingsMarkdownTable(ReducerdSettings(), kControlPlaneTable)),
            std::string::npos)
      << "docs/reference/settings.md's reducerd control-plane table differs from the registry; regenerate it "
         "with build/server/reducerd_settings_table control and paste it under \"reducerd's control plane\"";
}

TEST(ReducerdOptions, EverySettingIsDocumentedWithTheConvention) {
  for (const SettingInfo& s : ReducerdSettings()) {
    const std::string name = s.flag.empty() ? s.env : s.flag;
    EXPECT_NE(s.tables, 0u) << name << " is in no table";
    EXPECT_GT(s.doc.size(), 15u) << name << " has no real description";
    // CLUSTER_SPEC is Vertex AI's name, read as it is set there.
    if (s.env != "CLUSTER_SPEC") {
      EXPECT_EQ(s.env.rfind("REDUCER_", 0), 0u) << name;
    }
    for (const char* suffix : {"_MS", "_BYTES", "-ms", "-bytes"}) {
      for (const std::string& n : {s.flag, s.env}) {
        EXPECT_FALSE(n.size() >= std::string(suffix).size() &&
                     n.compare(n.size() - std::string(suffix).size(), std::string::npos, suffix) == 0)
            << n << " carries a unit in its name";
      }
    }
  }
}

}  // namespace
}  // namespace rs::server
