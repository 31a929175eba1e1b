// LD_PRELOAD=libnccl-net-reducer.so as the whole set-up: a process started
// with only that (and the reducer addresses) finds the plugin the way NCCL
// 2.28.9 looks for it, with CollNet on, and the plugin says at INFO what it
// set; whatever the user set (environment or nccl.conf) wins; a plugin that
// is dlopen'ed, not preloaded, sets nothing. Each case runs the probe
// (preload_probe.cc) with an explicit environment: nothing inherited.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/sanitizer_preload.h"

namespace {

namespace fs = std::filesystem;

constexpr char kSetAll[] =
    "log 3 NET/Reducer : LD_PRELOAD: set NCCL_NET_PLUGIN=reducer, NCCL_COLLNET_ENABLE=1, NCCL_NET_PLUGIN_REF_COUNT=1, "
    "NCCL_TUNER_PLUGIN=libnccl-net-reducer.so";

struct ProbeRun {
  int exit_code = -1;  // -1: killed at the deadline
  std::string output;
  std::vector<std::string> lines;

  bool Has(const std::string& line) const {
    for (const std::string& l : lines) {
      if (l == line) return true;
    }
    return false;
  }
  // Lines starting with `prefix`, in order.
  std::vector<std::string> With(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& l : lines) {
      if (l.rfind(prefix, 0) == 0) out.push_back(l);
    }
    return out;
  }
};

class Preload : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rs_preload_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    home_ = tmpl;
    plugin_ = fs::canonical(RS_PLUGIN_SO).string();
    std::ifstream etc("/etc/nccl.conf");
    for (std::string line; std::getline(etc, line);) {
      for (const char* name : {"NCCL_NET_PLUGIN=", "NCCL_COLLNET_ENABLE=", "NCCL_NET_PLUGIN_REF_COUNT="}) {
        if (line.rfind(name, 0) == 0) GTEST_SKIP() << "/etc/nccl.conf sets " << line << ", which every case would see";
      }
    }
  }
  void TearDown() override { fs::remove_all(home_); }

  // LD_PRELOAD's value naming `entry` (after any sanitizer runtime).
  static std::string PreloadOf(const std::string& entry) { return rs::testing::PreloadAfterSanitizers(entry); }

  // Runs the probe with exactly these variables (plus a HOME without an
  // nccl.conf, the reducer address and the sanitizers' options), at most 60 s.
  ProbeRun Run(const std::vector<std::string>& vars, const std::vector<std::string>& args = {}) {
    std::vector<std::string> env = {"HOME=" + home_, "REDUCER_ADDRS=127.0.0.1:1", "REDUCER_SOCKET_IFNAME=lo"};
    for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS"}) {
      if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
    }
    env.insert(env.end(), vars.begin(), vars.end());
    std::vector<char*> envp;
    for (std::string& kv : env) envp.push_back(kv.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_s = {RS_PRELOAD_PROBE};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    ProbeRun run;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return run;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, RS_PRELOAD_PROBE, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    EXPECT_EQ(rc, 0) << "posix_spawn " << RS_PRELOAD_PROBE;
    if (rc != 0) {
      ::close(fds[0]);
      return run;
    }
    // Read until EOF (the probe exited) or the deadline.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool eof = false;
    while (!eof) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd pfd{fds[0], POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[0], buf, sizeof(buf));
      if (n > 0) run.output.append(buf, static_cast<size_t>(n));
      eof = n <= 0;
    }
    ::close(fds[0]);
    if (!eof) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (eof) run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::istringstream in(run.output);
    for (std::string line; std::getline(in, line);) run.lines.push_back(line);
    return run;
  }

  std::string home_;
  std::string plugin_;  // real path of the built plugin
};

#define EXPECT_LINE(run, line) EXPECT_TRUE((run).Has(line)) << "no line \"" << (line) << "\" in:\n" << (run).output

// Found as NCCL 2.28.9 finds it: "reducer" first (not a file), then
// "libnccl-net-reducer.so", which the loader matches to the preloaded library
// by its soname; the tuner comes from the same library.
void ExpectFoundThroughPreload(const ProbeRun& run, const std::string& plugin) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_LINE(run, "env NCCL_NET_PLUGIN=reducer");
  EXPECT_LINE(run, "env NCCL_NET_PLUGIN_REF_COUNT=1");
  // NCCL 2.19 - 2.20 find a tuner only through it (tuner_releases_test).
  EXPECT_LINE(run, "env NCCL_TUNER_PLUGIN=libnccl-net-reducer.so");
  EXPECT_LINE(run, "refcount 1");
  EXPECT_EQ(run.With("tried "), (std::vector<std::string>{"tried reducer", "tried libnccl-net-reducer.so"}))
      << run.output;
  EXPECT_LINE(run, "loaded libnccl-net-reducer.so " + plugin + " net=11 coll=11");
  EXPECT_LINE(run, "init 0");
  EXPECT_LINE(run, "tuner libnccl-net-reducer.so v5=1");
}

TEST_F(Preload, AloneFindsThePluginWithCollNetOn) {
  const ProbeRun run = Run({"LD_PRELOAD=" + PreloadOf(plugin_)});
  ExpectFoundThroughPreload(run, plugin_);
  EXPECT_LINE(run, "env NCCL_COLLNET_ENABLE=1");
  // Said once, before the plugin's own lines.
  const std::vector<std::string> info = run.With("log 3 ");
  ASSERT_FALSE(info.empty()) << run.output;
  EXPECT_EQ(info.front(), kSetAll) << run.output;
  EXPECT_EQ(run.With("log 3 NET/Reducer : LD_PRELOAD").size(), 1u) << run.output;
}

TEST_F(Preload, ByBareFileNameOnTheLibraryPath) {
  const ProbeRun run = Run({"LD_PRELOAD=" + PreloadOf(fs::path(plugin_).filename().string()),
                            "LD_LIBRARY_PATH=" + fs::path(plugin_).parent_path().string()});
  ExpectFoundThroughPreload(run, plugin_);
  EXPECT_LINE(run, kSetAll);
}

TEST_F(Preload, TheUsersNetPluginWins) {
  const ProbeRun run = Run({"LD_PRELOAD=" + PreloadOf(plugin_), "NCCL_NET_PLUGIN=somethingelse"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_LINE(run, "env NCCL_NET_PLUGIN=somethingelse");
  EXPECT_EQ(run.With("tried "),
            (std::vector<std::string>{"tried somethingelse", "tried libnccl-net-somethingelse.so"}))
      << run.output;
  EXPECT_LINE(run, "nccl NET/Plugin: Could not find: somethingelse libnccl-net-somethingelse.so");
  EXPECT_LINE(run, "loaded none");
  // The others are still filled in.
  EXPECT_LINE(run, "env NCCL_COLLNET_ENABLE=1");
}

TEST_F(Preload, TheUsersCollNetDisableWins) {
  const ProbeRun run = Run({"LD_PRELOAD=" + PreloadOf(plugin_), "NCCL_COLLNET_ENABLE=0"});
  ExpectFoundThroughPreload(run, plugin_);
  EXPECT_LINE(run, "env NCCL_COLLNET_ENABLE=0");
  EXPECT_LINE(run,
              "log 3 NET/Reducer : LD_PRELOAD: set NCCL_NET_PLUGIN=reducer, NCCL_NET_PLUGIN_REF_COUNT=1, "
              "NCCL_TUNER_PLUGIN=libnccl-net-reducer.so; "
              "left the user's NCCL_COLLNET_ENABLE=0");
}

// NCCL applies nccl.conf with setenv(..., 0) at its first call, after the
// constructor: a value there must not be pre-empted.
TEST_F(Preload, AValueInNcclConfWins) {
  const std::string conf = home_ + "/job-nccl.conf";
  std::ofstream(conf) << "# the job's NCCL settings\nNCCL_COLLNET_ENABLE=0\n";
  const ProbeRun run = Run({"LD_PRELOAD=" + PreloadOf(plugin_), "NCCL_CONF_FILE=" + conf});
  ExpectFoundThroughPreload(run, plugin_);
  EXPECT_LINE(run, "env NCCL_COLLNET_ENABLE unset");
  EXPECT_LINE(run,
              "log 3 NET/Reducer : LD_PRELOAD: set NCCL_NET_PLUGIN=reducer, NCCL_NET_PLUGIN_REF_COUNT=1, "
              "NCCL_TUNER_PLUGIN=libnccl-net-reducer.so; "
              "left the user's NCCL_COLLNET_ENABLE=0 (from " + conf + ")");
}

TEST_F(Preload, ValuesAlreadyOursAreNotCalledTheUsers) {
  // A child of a preloaded process inherits what its parent's constructor set.
  const ProbeRun run = Run({"LD_PRELOAD=" + PreloadOf(plugin_), "NCCL_NET_PLUGIN=reducer", "NCCL_COLLNET_ENABLE=1",
                            "NCCL_NET_PLUGIN_REF_COUNT=1", "NCCL_TUNER_PLUGIN=libnccl-net-reducer.so"});
  ExpectFoundThroughPreload(run, plugin_);
  EXPECT_LINE(run,
              "log 3 NET/Reducer : LD_PRELOAD: set nothing; already set: NCCL_NET_PLUGIN=reducer, "
              "NCCL_COLLNET_ENABLE=1, NCCL_NET_PLUGIN_REF_COUNT=1, NCCL_TUNER_PLUGIN=libnccl-net-reducer.so");
}

TEST_F(Preload, NotPreloadedSetsNothing) {
  // Loaded by the program itself: NCCL then looks for libnccl-net.so only.
  const ProbeRun own = Run({}, {"--dlopen", plugin_});
  ASSERT_EQ(own.exit_code, 0) << own.output;
  EXPECT_LINE(own, "env NCCL_NET_PLUGIN unset");
  EXPECT_LINE(own, "env NCCL_COLLNET_ENABLE unset");
  EXPECT_LINE(own, "env NCCL_NET_PLUGIN_REF_COUNT unset");
  EXPECT_LINE(own, "env NCCL_TUNER_PLUGIN unset");
  EXPECT_EQ(own.With("tried "), std::vector<std::string>{"tried libnccl-net.so"}) << own.output;

  // Found by NCCL through the user's NCCL_NET_PLUGIN (a path: opened as given).
  const ProbeRun nccl = Run({"NCCL_NET_PLUGIN=" + plugin_});
  ASSERT_EQ(nccl.exit_code, 0) << nccl.output;
  EXPECT_EQ(nccl.With("tried "), std::vector<std::string>{"tried " + plugin_}) << nccl.output;
  EXPECT_LINE(nccl, "init 0");
  EXPECT_LINE(nccl, "env NCCL_COLLNET_ENABLE unset");
  EXPECT_LINE(nccl, "refcount 0");
  for (const std::string& line : nccl.lines) EXPECT_EQ(line.find("LD_PRELOAD"), std::string::npos) << line;
}

// LD_PRELOAD naming the library in a process that did not preload it (set
// after the start, e.g. from Python): it loads among running threads, where
// setenv could race with getenv, so it sets nothing and says why.
TEST_F(Preload, LoadedAmongThreadsSetsNothing) {
  const ProbeRun run = Run({"NCCL_NET_PLUGIN=" + plugin_}, {"--thread-then-dlopen", plugin_});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_LINE(run, "env NCCL_COLLNET_ENABLE unset");
  EXPECT_LINE(run, "init 0");
  const std::vector<std::string> said = run.With("log 3 NET/Reducer : LD_PRELOAD names this library");
  ASSERT_EQ(said.size(), 1u) << run.output;
  EXPECT_NE(said[0].find("already running "), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("set nothing"), std::string::npos) << said[0];
}

#undef EXPECT_LINE  // not for the next file of a unity batch

}  // namespace
