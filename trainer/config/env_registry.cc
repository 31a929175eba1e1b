#include "trainer/config/env_registry.h"

#include <cstdlib>

namespace rs::trainer {
namespace {

constexpr std::array<EnvVarInfo, kNumEnvVars> kVars = {{
    {EnvKey::kRank, "RANK", "--rank", "This process's rank, 0 to WORLD_SIZE-1 (torchrun, Vertex AI)."},
    {EnvKey::kWorldSize, "WORLD_SIZE", "--world", "Number of ranks (torchrun, Vertex AI)."},
    {EnvKey::kLocalRank, "LOCAL_RANK", "--local-rank",
     "Rank within this machine; the GPU backend uses GPU LOCAL_RANK modulo the GPUs it sees."},
    {EnvKey::kMasterAddr, "MASTER_ADDR", "--master-addr",
     "Rank 0's host: rank 0 serves the rendezvous there (NCCL's id, the session id, a settings check)."},
    {EnvKey::kMasterPort, "MASTER_PORT", "--master-port", "The rendezvous port on MASTER_ADDR."},
    {EnvKey::kTorchAgentStore, "TORCHELASTIC_USE_AGENT_STORE", "",
     "Set by torchrun, whose agent then holds MASTER_PORT: the rendezvous moves to MASTER_PORT+1."},
    {EnvKey::kClusterSpec, "CLUSTER_SPEC", "",
     "Vertex AI's cluster JSON: reducers are workerpool2; without RANK/WORLD_SIZE the ranks are workerpool0 "
     "(rank 0) then workerpool1; without MASTER_ADDR the rendezvous is workerpool0[0]."},
    {EnvKey::kReducerAddrs, "REDUCER_ADDRS", "--reducers", "Reducers as host:port,host:port. Overrides CLUSTER_SPEC."},
    {EnvKey::kJobToken, "REDUCER_JOB_TOKEN", "", "The job token the reducers require. Never printed."},
    {EnvKey::kJobTokenFile, "REDUCER_JOB_TOKEN_FILE", "--job-token-file",
     "File holding the job token; used when REDUCER_JOB_TOKEN is unset."},
    {EnvKey::kSession, "REDUCER_SESSION", "--session",
     "CPU backend without a rendezvous: the session name every rank must share (default rs-train)."},
    {EnvKey::kStreams, "REDUCER_STREAMS", "--streams", "CPU backend: TCP streams to each reducer."},
    {EnvKey::kPieceBytes, "REDUCER_PIECE_BYTES", "--piece-bytes",
     "CPU backend: largest piece of an all-reduce sent to one reducer (same on every rank)."},
    {EnvKey::kSendWindow, "REDUCER_SEND_WINDOW", "--send-window",
     "CPU backend: bytes of pieces one stream may have in flight (0: no limit)."},
    {EnvKey::kIoThreads, "REDUCER_IO_THREADS", "--io-threads", "CPU backend: client I/O threads."},
    {EnvKey::kOpTimeoutMs, "REDUCER_OP_TIMEOUT_MS", "--timeout",
     "An all-reduce with no result for this long fails the run (ms)."},
    {EnvKey::kConnectTimeoutMs, "REDUCER_CONNECT_TIMEOUT_MS", "--connect-timeout",
     "Bound on joining the reducers (ms)."},
}};

constexpr bool InKeyOrder() {
  for (int i = 0; i < kNumEnvVars; ++i) {
    if (static_cast<int>(kVars[i].key) != i) return false;
  }
  return true;
}
static_assert(InKeyOrder(), "kVars must list every EnvKey in enum order");

}  // namespace

const std::array<EnvVarInfo, kNumEnvVars>& EnvVars() { return kVars; }
const EnvVarInfo& EnvInfo(EnvKey key) { return kVars[static_cast<int>(key)]; }

TrainerEnv TrainerEnv::FromLookup(const Lookup& lookup) {
  TrainerEnv env;
  for (const EnvVarInfo& var : kVars) {
    if (const char* value = lookup(var.name); value != nullptr) env.values_[static_cast<int>(var.key)] = value;
  }
  return env;
}

const TrainerEnv& TrainerEnv::Process() {
  static const TrainerEnv env = FromLookup([](const char* name) { return std::getenv(name); });
  return env;
}

bool TrainerEnv::IsSet(EnvKey key) const {
  const auto& v = values_[static_cast<int>(key)];
  return v.has_value() && !v->empty();
}

std::string TrainerEnv::Get(EnvKey key) const { return IsSet(key) ? *values_[static_cast<int>(key)] : ""; }

std::string TrainerEnvMarkdownTable() {
  std::string out = "| Variable | Flag | Meaning |\n|---|---|---|\n";
  for (const EnvVarInfo& var : kVars) {
    out += std::string("| `") + var.name + "` | " + (var.flag[0] ? std::string("`") + var.flag + "`" : "") + " | " +
           var.doc + " |\n";
  }
  return out;
}

}  // namespace rs::trainer
