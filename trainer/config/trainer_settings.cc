#include "trainer/config/trainer_settings.h"

#include "client/client_settings.h"

namespace rs::trainer {

const std::vector<SettingInfo>& TrainerSettings() {
  // Defaults left empty are resolved in options.cc (rank and world may come
  // from CLUSTER_SPEC, the rendezvous from CLUSTER_SPEC or nowhere); the
  // default column says what they come to.
  static const std::vector<SettingInfo> kSettings = [] {
    std::vector<SettingInfo> out = {
        Entry(setting::kRank, "N", "", "0", "This process's rank, 0 to world-1 (torchrun, Vertex AI)"),
        Entry(setting::kWorld, "N", "", "1", "Number of ranks (torchrun, Vertex AI)"),
        Entry(setting::kLocalRank, "N", "0", "",
              "Rank within this machine; the GPU backend uses GPU `LOCAL_RANK` modulo the GPUs it sees"),
        Entry(setting::kMasterAddr, "HOST", "", "none",
              "Rank 0's host: rank 0 serves the rendezvous there (NCCL's id, the session id, the settings check)"),
        Entry(setting::kMasterPort, "PORT", "", "none", "The rendezvous port on `MASTER_ADDR`"),
        Entry(setting::kTorchelasticAgentStore, "", "", "",
              "Set by torchrun, whose agent then holds `MASTER_PORT`: the rendezvous moves to `MASTER_PORT`+1"),
        Entry(setting::kClusterSpec, "", "", "",
              "Vertex AI's cluster JSON: reducers are `workerpool2`; without `RANK`/`WORLD_SIZE` the ranks are "
              "`workerpool0` (rank 0) then `workerpool1`; without `MASTER_ADDR` the rendezvous is `workerpool0[0]`"),
        Entry(setting::kReducers, "HOST:PORT,...", "", "",
              "Reducers, the same list on every rank; overrides "
              "`CLUSTER_SPEC`"),
        Entry(setting::kJobToken, "", "", "", "The job token the reducers require; never printed"),
        Entry(setting::kJobTokenFile, "FILE", "", "",
              "File holding the job token; the variable is used when `REDUCER_JOB_TOKEN` is unset, the flag always"),
        Entry(setting::kSession, "NAME", "rs-train", "",
              "CPU backend without a rendezvous: the session name every rank must share"),
    };
    // The client's settings, from their one list (client/client_settings.h).
    // All but the two timeouts are the CPU backend's (the GPU backend's NCCL
    // plugin reads the variables itself); those two bound NCCL's calls too.
    const std::vector<SettingInfo> plain = client::ClientSettingInfos();
    const std::vector<SettingInfo> cpu = client::ClientSettingInfos("CPU backend: ");
    for (size_t i = 0; i < plain.size(); ++i) {
      const bool both =
          plain[i].flag == client::setting::kOpTimeout.flag || plain[i].flag == client::setting::kConnectTimeout.flag;
      out.push_back(both ? plain[i] : cpu[i]);
    }
    FindSetting(out, client::setting::kOpTimeout).old_flags.push_back({"--timeout", ""});
    return out;
  }();
  return kSettings;
}

std::string TrainerSettingsTable() { return SettingsMarkdownTable(TrainerSettings(), 1); }

}  // namespace rs::trainer
