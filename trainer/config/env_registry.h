// The one registry of environment variables rs-train reads: the launchers'
// (torchrun, Vertex AI: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT, CLUSTER_SPEC) and the reducers' (REDUCER_ADDRS, the job
// token, the client's settings, under the same names the NCCL plugin uses).
// The process environment is read once into an immutable snapshot; nothing
// else in the trainer calls getenv. Each variable has a one-line description
// for --help and the README table (TrainerEnvMarkdownTable).
//
// Thread-safety: TrainerEnv is immutable; Process() is safe from any thread.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>

namespace rs::trainer {

enum class EnvKey : int {
  kRank,
  kWorldSize,
  kLocalRank,
  kMasterAddr,
  kMasterPort,
  kTorchAgentStore,
  kClusterSpec,
  kReducerAddrs,
  kJobToken,
  kJobTokenFile,
  kSession,
  kStreams,
  kPieceBytes,
  kSendWindow,
  kIoThreads,
  kOpTimeoutMs,
  kConnectTimeoutMs,
  kCount,
};
inline constexpr int kNumEnvVars = static_cast<int>(EnvKey::kCount);

struct EnvVarInfo {
  EnvKey key;
  const char* name;
  const char* flag;  // the flag that overrides it, or "" when none
  const char* doc;
};

const std::array<EnvVarInfo, kNumEnvVars>& EnvVars();
const EnvVarInfo& EnvInfo(EnvKey key);

class TrainerEnv {
 public:
  // Returns a variable's value or nullptr (getenv's contract).
  using Lookup = std::function<const char*(const char* name)>;

  // A snapshot through `lookup` (tests pass a map).
  static TrainerEnv FromLookup(const Lookup& lookup);
  // The process environment, read on the first call only.
  static const TrainerEnv& Process();

  // Set to a non-empty value.
  bool IsSet(EnvKey key) const;
  // The value, empty when unset.
  std::string Get(EnvKey key) const;
  const char* Name(EnvKey key) const { return EnvInfo(key).name; }

 private:
  std::array<std::optional<std::string>, kNumEnvVars> values_;
};

// "| Variable | Flag | Meaning |" for the README.
std::string TrainerEnvMarkdownTable();

}  // namespace rs::trainer
