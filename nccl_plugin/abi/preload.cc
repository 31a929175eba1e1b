// The load-time constructor behind LD_PRELOAD=libnccl-net-reducer.so.
//
// Why it exists: with NCCL_NET_PLUGIN unset, NCCL dlopens only
// "libnccl-net.so" (2.28.9: src/plugin/plugin_open.cc, openPluginLib), whose
// name a preloaded libnccl-net-reducer.so does not match, and CollNet stays
// off without NCCL_COLLNET_ENABLE=1. Training images set LD_PRELOAD and
// nothing else, so the preloaded library fills those variables in.
//
// Why setenv here, against the rule that a library never sets variables:
// NCCL reads these only from the environment (its default env plugin is
// getenv at the time of each read, src/plugin/env/env_v1.cc; NCCL_NET_PLUGIN
// at the first communicator, NCCL_COLLNET_ENABLE at every one), and a
// preloaded library has no other channel to NCCL. It is safe because
//   - it runs only when LD_PRELOAD names this file, and only while the
//     process has a single thread (/proc/self/status, where /proc is
//     mounted), so no getenv can race;
//   - it only adds what is absent (setenv(..., 0)): a variable the user
//     exported, even empty, or one an nccl.conf sets (NCCL_CONF_FILE or
//     $HOME/.nccl.conf, then /etc/nccl.conf: NCCL applies those with
//     setenv(..., 0) too, at its first call, so adding ours first would
//     override them) is left alone;
//   - it touches nothing else: no thread, no NCCL, no output, no C++
//     allocation; it runs in every process the job starts (python, bash...),
//     so it costs a getenv, a dladdr and, when preloaded, a few small reads.
// What it did is kept in g_record for the first init to log (preload.h).
//
// Not handled: /etc/ld.so.preload (not LD_PRELOAD: nothing is set), $LIB
// or $PLATFORM in an LD_PRELOAD entry (not expanded: the entry does not
// match), an external NCCL env plugin (NCCL_ENV_PLUGIN / libnccl-env.so)
// that does not read the process environment, and a collnetEnable set in
// ncclConfig_t, which NCCL_COLLNET_ENABLE overrides (init.cc).
#include "nccl_plugin/abi/preload.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nccl_plugin/log.h"

namespace rs::plugin::abi {
namespace {

struct Default {
  const char* name;
  const char* value;
};
// NCCL_NET_PLUGIN_REF_COUNT=1: NCCL 2.27 - 2.29 unload the net plugin with
// its last communicator and clear its name (NVIDIA/nccl#1978), so the next
// communicator looks for "libnccl-net.so" and silently falls back to NCCL's
// own transports; a count that starts at 1 never reaches 0.
// NCCL_TUNER_PLUGIN=libnccl-net-reducer.so: NCCL 2.19 - 2.20 take a tuner
// only from the library this variable names (passed to dlopen as is,
// misc/tuner.cc), and every later release also opens it first, before
// libnccl-tuner.so and the net library; the soname matches the library
// already preloaded. Without it those releases never choose the reducers.
constexpr Default kDefaults[] = {
    {"NCCL_NET_PLUGIN", kPreloadNetPluginValue},
    {"NCCL_COLLNET_ENABLE", "1"},
    {"NCCL_NET_PLUGIN_REF_COUNT", "1"},
    {"NCCL_TUNER_PLUGIN", kPreloadTunerPluginValue},
};
constexpr int kNumDefaults = sizeof(kDefaults) / sizeof(kDefaults[0]);

enum class Outcome : unsigned char { kNone, kSet, kAlreadyOurs, kUserValue, kConfFile, kSetFailed };

struct VarRecord {
  Outcome outcome;
  char value[128];   // the value left in place, for the log (truncated)
  char source[256];  // the nccl.conf that sets it
};

// Zero-initialised and trivially destructible: valid before any constructor
// of this library and after its destructors.
struct {
  bool preloaded;
  long threads;  // > 1: loaded into a running process, nothing set
  VarRecord vars[kNumDefaults];
} g_record;

void Copy(char* dst, size_t cap, const char* src) { std::snprintf(dst, cap, "%s", src); }

const char* BaseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

// Whether one LD_PRELOAD entry is this library: a path (the loader opens it
// as given) by its real path; a bare name (searched like a DT_NEEDED) by the
// file name.
bool EntryIsSelf(const char* entry, const char* self, const char* self_real) {
  if (std::strchr(entry, '/') == nullptr) {
    return std::strcmp(entry, BaseName(self)) == 0 || std::strcmp(entry, BaseName(self_real)) == 0;
  }
  char real[PATH_MAX];
  return ::realpath(entry, real) != nullptr && std::strcmp(real, self_real) == 0;
}

// ld.so splits LD_PRELOAD on spaces and colons; tabs and newlines too here.
bool PreloadListNamesSelf(const char* list, const char* self, const char* self_real) {
  constexpr const char* kSeparators = ": \t\n";
  char entry[PATH_MAX];
  for (const char* p = list + std::strspn(list, kSeparators); *p != '\0'; p += std::strspn(p, kSeparators)) {
    const size_t len = std::strcspn(p, kSeparators);  // > 0: *p is no separator
    if (len < sizeof(entry)) {
      std::memcpy(entry, p, len);
      entry[len] = '\0';
      if (EntryIsSelf(entry, self, self_real)) return true;
    }
    p += len;
  }
  return false;
}

// The process's thread count, or 0 when /proc cannot tell.
long ThreadCount() {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* line = std::strstr(buf, "\nThreads:");
  return line != nullptr ? std::strtol(line + 9, nullptr, 10) : 0;
}

// Records, for each default not in the environment, an nccl.conf line that
// sets it, read as NCCL's setEnvFile reads it (param.cc): '#' lines skipped,
// the name is everything before the first '=', the value the rest of the
// line. NCCL takes the home file from the passwd entry; $HOME here (getpwuid
// could load NSS modules in every process).
void FindInConfFile(const char* path) {
  FILE* file = std::fopen(path, "re");
  if (file == nullptr) return;
  char* line = nullptr;
  size_t cap = 0;
  ssize_t len = 0;
  for (int lines = 0; lines < 100000 && (len = ::getline(&line, &cap, file)) != -1; ++lines) {
    if (line[0] == '#') continue;
    if (len > 0 && line[len - 1] == '\n') line[len - 1] = '\0';
    char* eq = std::strchr(line, '=');
    if (eq == nullptr) continue;
    *eq = '\0';
    for (int i = 0; i < kNumDefaults; ++i) {
      VarRecord& var = g_record.vars[i];
      if (var.outcome != Outcome::kNone || std::strcmp(line, kDefaults[i].name) != 0) continue;
      var.outcome = Outcome::kConfFile;
      Copy(var.value, sizeof(var.value), eq + 1);
      Copy(var.source, sizeof(var.source), path);
    }
  }
  std::free(line);
  std::fclose(file);
}

void FindInConfFiles() {
  char path[PATH_MAX];
  const char* conf = std::getenv("NCCL_CONF_FILE");
  const char* home = std::getenv("HOME");
  if (conf != nullptr && conf[0] != '\0') {
    FindInConfFile(conf);
  } else if (home != nullptr && home[0] != '\0' &&
             std::snprintf(path, sizeof(path), "%s/.nccl.conf", home) < static_cast<int>(sizeof(path))) {
    FindInConfFile(path);
  }
  FindInConfFile("/etc/nccl.conf");
}

void FillInNcclDefaults() {
  Dl_info info;
  if (::dladdr(static_cast<const void*>(&g_record), &info) == 0 || info.dli_fname == nullptr) return;
  const char* preload = std::getenv("LD_PRELOAD");
  char self_real[PATH_MAX];
  if (preload == nullptr || ::realpath(info.dli_fname, self_real) == nullptr ||
      !PreloadListNamesSelf(preload, info.dli_fname, self_real)) {
    return;
  }
  g_record.preloaded = true;
  g_record.threads = ThreadCount();
  if (g_record.threads > 1) return;

  bool any_absent = false;
  for (int i = 0; i < kNumDefaults; ++i) {
    VarRecord& var = g_record.vars[i];
    const char* current = std::getenv(kDefaults[i].name);
    if (current == nullptr) {
      any_absent = true;
      continue;
    }
    var.outcome = std::strcmp(current, kDefaults[i].value) == 0 ? Outcome::kAlreadyOurs : Outcome::kUserValue;
    Copy(var.value, sizeof(var.value), current);
  }
  if (any_absent) FindInConfFiles();
  for (int i = 0; i < kNumDefaults; ++i) {
    VarRecord& var = g_record.vars[i];
    if (var.outcome != Outcome::kNone) continue;
    var.outcome = ::setenv(kDefaults[i].name, kDefaults[i].value, 0) == 0 ? Outcome::kSet : Outcome::kSetFailed;
  }
}

// Before main when preloaded; at dlopen otherwise, where it only looks.
__attribute__((constructor)) void PreloadConstructor() noexcept { FillInNcclDefaults(); }

std::string Summary() {
  if (!g_record.preloaded) return "";
  if (g_record.threads > 1) {
    return "LD_PRELOAD names this library, but it was loaded into a process already running " +
           std::to_string(g_record.threads) +
           " threads (not preloaded at its start): set nothing; export NCCL_NET_PLUGIN=" + kPreloadNetPluginValue +
           " and NCCL_COLLNET_ENABLE=1 before the process starts";
  }
  std::string set, left, ours, failed;
  auto add = [](std::string* list, const std::string& item) { *list += (list->empty() ? "" : ", ") + item; };
  for (int i = 0; i < kNumDefaults; ++i) {
    const VarRecord& var = g_record.vars[i];
    const std::string name = kDefaults[i].name;
    switch (var.outcome) {
      case Outcome::kSet: add(&set, name + "=" + kDefaults[i].value); break;
      case Outcome::kAlreadyOurs: add(&ours, name + "=" + var.value); break;
      case Outcome::kUserValue: add(&left, name + "=" + var.value); break;
      case Outcome::kConfFile: add(&left, name + "=" + var.value + " (from " + var.source + ")"); break;
      case Outcome::kSetFailed: add(&failed, name); break;
      case Outcome::kNone: break;
    }
  }
  std::string out = "LD_PRELOAD: " + (set.empty() ? std::string("set nothing") : "set " + set);
  if (!left.empty()) out += "; left the user's " + left;
  if (!ours.empty()) out += "; already set: " + ours;
  if (!failed.empty()) out += "; could not set " + failed + " (setenv failed)";
  return out;
}

}  // namespace

void LogPreloadOutcome() {
  static bool logged = false;  // InitLibrary calls this under its mutex
  if (logged) return;
  logged = true;
  const std::string line = Summary();
  if (!line.empty()) RS_PLOG_INFO("%s", line.c_str());
}

}  // namespace rs::plugin::abi
