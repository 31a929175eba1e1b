#include "trainer/config/trainer_settings.h"

namespace rs::trainer {

const std::vector<SettingInfo>& TrainerSettings() {
  // Defaults left empty are resolved in options.cc (rank and world may come
  // from CLUSTER_SPEC, the rendezvous from CLUSTER_SPEC or nowhere); the
  // default column says what they come to.
  static const std::vector<SettingInfo> kSettings = {
      {"--rank", "RANK", "N", "", "0", "This process's rank, 0 to world-1 (torchrun, Vertex AI)"},
      {"--world", "WORLD_SIZE", "N", "", "1", "Number of ranks (torchrun, Vertex AI)"},
      {"--local-rank", "LOCAL_RANK", "N", "0", "",
       "Rank within this machine; the GPU backend uses GPU `LOCAL_RANK` modulo the GPUs it sees"},
      {"--master-addr", "MASTER_ADDR", "HOST", "", "none",
       "Rank 0's host: rank 0 serves the rendezvous there (NCCL's id, the session id, the settings check)"},
      {"--master-port", "MASTER_PORT", "PORT", "", "none", "The rendezvous port on `MASTER_ADDR`"},
      {"", "TORCHELASTIC_USE_AGENT_STORE", "", "", "",
       "Set by torchrun, whose agent then holds `MASTER_PORT`: the rendezvous moves to `MASTER_PORT`+1"},
      {"", "CLUSTER_SPEC", "", "", "",
       "Vertex AI's cluster JSON: reducers are `workerpool2`; without `RANK`/`WORLD_SIZE` the ranks are "
       "`workerpool0` (rank 0) then `workerpool1`; without `MASTER_ADDR` the rendezvous is `workerpool0[0]`"},
      {"--reducers", "REDUCER_ADDRS", "HOST:PORT,...", "", "", "Reducers, the same list on every rank; overrides "
       "`CLUSTER_SPEC`"},
      {"", "REDUCER_JOB_TOKEN", "", "", "", "The job token the reducers require; never printed"},
      {"--job-token-file", "REDUCER_JOB_TOKEN_FILE", "FILE", "", "",
       "File holding the job token; the variable is used when `REDUCER_JOB_TOKEN` is unset, the flag always"},
      {"--session", "REDUCER_SESSION", "NAME", "rs-train", "",
       "CPU backend without a rendezvous: the session name every rank must share"},
      {"--streams", "REDUCER_STREAMS", "N", "", "auto: 1", "CPU backend: TCP streams to each reducer (1-64)"},
      {"--max-piece", "REDUCER_MAX_PIECE", "SIZE", "", "auto: 512KiB / reducers, 64KiB-512KiB",
       "CPU backend: largest piece of an all-reduce sent to one reducer (4KiB-1GiB; the same on every rank)",
       {{"--piece-bytes", ""}}, {{"REDUCER_PIECE_BYTES", ""}}},
      {"--min-piece", "REDUCER_MIN_PIECE", "SIZE", "64KiB", "",
       "CPU backend: below this an all-reduce is not split further to reach every reducer (the same on every "
       "rank)"},
      {"--send-window", "REDUCER_SEND_WINDOW", "SIZE", "", "auto: 4 pieces or 2 pieces + 2 x BDP",
       "CPU backend: bytes of pieces one stream may have sent without their results back; 0: no limit"},
      {"--write-slice", "REDUCER_WRITE_SLICE", "SIZE", "", "auto: 0.5 ms of the path, at least 64KiB",
       "CPU backend: with streams to several reducers, bytes of pieces a stream writes at a time, so that they "
       "take turns on this rank's link; 0: whole batches"},
      {"--io-threads", "REDUCER_IO_THREADS", "N", "1", "", "CPU backend: client I/O threads (1-64)"},
      {"--op-timeout", "REDUCER_OP_TIMEOUT", "DUR", "90s", "",
       "An all-reduce with no answer from a reducer for this long fails the run; keep it above the reducers' "
       "`--op-timeout` so their error, which names the missing ranks, arrives first",
       {{"--timeout", ""}}, {{"REDUCER_OP_TIMEOUT_MS", "ms"}}},
      {"--connect-timeout", "REDUCER_CONNECT_TIMEOUT", "DUR", "60s", "",
       "Bound on joining the reducers (connecting and every rank joining the session)", {},
       {{"REDUCER_CONNECT_TIMEOUT_MS", "ms"}}},
      {"--liveness-timeout", "REDUCER_LIVENESS_TIMEOUT", "DUR", "5s", "",
       "CPU backend: a reducer that sends nothing for this long (frozen, host down, link cut) is lost (see "
       "`--failover`); the reducers use it to detect a silent rank. At least 100ms; 0: off"},
      {"--crc", "REDUCER_CRC", "0/1", "0", "",
       "CPU backend: 1: CRC32C over every piece and result, checked end to end (with the reducers' `--crc`); "
       "0: off. The same on every rank"},
      {"--wire-dtype", "REDUCER_WIRE_DTYPE", "TYPE", "off", "",
       "CPU backend: `bfloat16` or `float16`: float32 gradients travel in that type (half the bytes), rounded once "
       "by each rank and once by the reducers after their float32 sum; `--verify` applies the same roundings. "
       "`off`: float32. The same on every rank"},
      {"--failover", "REDUCER_FAILOVER", "0/1", "1", "",
       "CPU backend: 1: a lost reducer is survived (the others take over its share, results bit for bit "
       "unchanged; a restarted one is taken back), each rank keeping a copy of its recent gradients for it. "
       "0: losing a reducer ends the run. The same on every rank"},
      {"--min-reducers", "REDUCER_MIN_REDUCERS", "N", "1", "",
       "CPU backend, with failover: the run fails when fewer reducers than this are left"},
      {"--retention", "REDUCER_RETENTION", "SIZE", "256MiB", "",
       "CPU backend, with failover: memory for the copies of gradients not yet reduced on every rank (at least "
       "1MiB); when full, new all-reduces wait for the slowest rank"},
  };
  return kSettings;
}

std::string TrainerSettingsTable() { return SettingsMarkdownTable(TrainerSettings(), 1); }

}  // namespace rs::trainer
