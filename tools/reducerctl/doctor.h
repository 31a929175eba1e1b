// `reducerctl doctor`: run inside a training image with the job's
// environment (no GPU needed), it says whether NCCL will use the reducers:
// whether the plugin loads and what it exports, which NCCL the image has,
// whether that NCCL will choose CollNet with the current settings
// (NCCL_COLLNET_ENABLE, NCCL_NET_PLUGIN / LD_PRELOAD, NCCL_ALGO, the tuner),
// and whether each reducer answers and accepts the job token; for each
// problem, what to change. The environment is read as NCCL reads it: the
// process environment first, then NCCL_CONF_FILE (else ~/.nccl.conf) and
// /etc/nccl.conf; the plugin's own settings through its registry
// (nccl_plugin/config/), so the doctor reads them exactly as the plugin will.
//
// Thread-safety: RunDoctor may be called from one thread at a time (it
// opens libraries and probes the reducers on threads of its own, joined
// before it returns); the render functions are pure.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tools/reducerctl/doctor_checks.h"

namespace rs::reducerctl {

struct DoctorOptions {
  std::string plugin_path;  // --plugin: this library instead of NCCL's search
  std::string nccl_path;    // --nccl: this libnccl.so.2 instead of the loader's
  std::chrono::milliseconds reducer_timeout{3'000};
};

struct DoctorReport {
  std::vector<Check> checks;
  Verdict verdict;
};

// getenv's contract: the value or nullptr.
using EnvLookup = std::function<const char*(const char* name)>;

DoctorReport RunDoctor(const DoctorOptions& options, const EnvLookup& env);

// One line per check ("OK    plugin: ..."), the fix indented under it,
// then the verdict line.
std::string RenderDoctor(const DoctorReport& report);
// One JSON object: {"checks":[{"level","name","text","fix"}...],
// "will_be_used":bool,"verdict":"..."}.
std::string DoctorJson(const DoctorReport& report);

}  // namespace rs::reducerctl
