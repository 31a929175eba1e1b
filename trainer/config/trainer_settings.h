// rs-train's settings registry (common/settings.h): every setting that has
// an environment variable, with its flag, default, description and old
// names. The launchers' variables (torchrun, Vertex AI: RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT, CLUSTER_SPEC) and the reducers'
// (REDUCER_ADDRS, the job token, and the client's settings, taken from
// their one list, client/client_settings.h, which reducer-bench and the NCCL
// plugin share: REDUCER_MAX_PIECE, REDUCER_OP_TIMEOUT, REDUCER_FAILOVER,
// ...). This list feeds the command
// line, the resolution of every value (options.cc), the deprecation notices,
// --help and the README table (a test compares it); nothing else in the
// trainer reads the environment. The trainer's own flags without a variable
// (--steps, --batch, ...) are declared in options.cc.
//
// Thread-safety: immutable after the first call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.h"

namespace rs::trainer {

// The keys of rs-train's own settings (common/settings.h); the client's
// shared ones are client::setting's.
namespace setting {
inline constexpr SettingKey<int64_t> kRank{"--rank", "RANK"};
inline constexpr SettingKey<int64_t> kWorld{"--world", "WORLD_SIZE"};
inline constexpr SettingKey<int64_t> kLocalRank{"--local-rank", "LOCAL_RANK"};
inline constexpr SettingKey<std::string> kMasterAddr{"--master-addr", "MASTER_ADDR"};
inline constexpr SettingKey<int64_t> kMasterPort{"--master-port", "MASTER_PORT"};
inline constexpr SettingKey<std::string> kTorchelasticAgentStore{"", "TORCHELASTIC_USE_AGENT_STORE"};
inline constexpr SettingKey<std::string> kClusterSpec{"", "CLUSTER_SPEC"};
inline constexpr SettingKey<std::string> kReducers{"--reducers", "REDUCER_ADDRS"};
inline constexpr SettingKey<std::string> kJobToken{"", "REDUCER_JOB_TOKEN"};
inline constexpr SettingKey<std::string> kJobTokenFile{"--job-token-file", "REDUCER_JOB_TOKEN_FILE"};
inline constexpr SettingKey<std::string> kSession{"--session", "REDUCER_SESSION"};
}  // namespace setting

const std::vector<SettingInfo>& TrainerSettings();

// The README's "Training: rs-train / Environment" table.
std::string TrainerSettingsTable();

}  // namespace rs::trainer
