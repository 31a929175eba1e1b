// What each component concludes from one process environment, without
// binding or connecting anything: the deployment tests run it with the
// environment a Vertex AI replica (CLUSTER_SPEC) or a Kubernetes pod of
// deploy/ gets, and check that every component finds the same reducers.
//
//   rs_cluster_spec_probe    prints one JSON object:
//     {"plugin":   {"reducers": ["host:port", ...], "source": "...", "token": true}
//                  or {"off": "why"} or {"error": "..."},
//      "reducerd": {"listen": "host:port", "origin": "..."} or {"error": "..."},
//      "rs-train": {"reducers": [...], "rank": r, "world": w, "master": "host:port"} or {"error": "..."}}
//
// The code that decides is the components' own: the NCCL plugin's
// configuration (nccl_plugin/config), reducerd's options (server/options.h)
// and rs-train's (trainer/config). The token itself is never printed.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nccl_plugin/config/plugin_config.h"
#include "server/options.h"
#include "trainer/config/options.h"

namespace {

using nlohmann::json;

json Endpoints(const std::vector<rs::client::Endpoint>& list) {
  json out = json::array();
  for (const rs::client::Endpoint& e : list) out.push_back(e.ToString());
  return out;
}

json Plugin() {
  const rs::plugin::Env env = rs::plugin::Env::FromLookup([](const char* name) { return std::getenv(name); });
  rs::StatusOr<rs::plugin::CollNetConfig> cfg = rs::plugin::CollNetConfigFromEnv(env);
  if (!cfg.ok()) return {{"error", cfg.status().message()}};
  if (cfg->reducers.empty()) return {{"off", cfg->off_reason}};
  return {{"reducers", Endpoints(cfg->reducers)}, {"source", cfg->source}, {"token", !cfg->job_token.empty()}};
}

json Reducerd() {
  char name[] = "reducerd";
  char* argv[] = {name, nullptr};
  rs::StatusOr<rs::server::Options> o = rs::server::ParseOptions(1, argv);
  if (!o.ok()) return {{"error", o.status().message()}};
  return {{"listen", o->net.listen_host + ":" + std::to_string(o->net.listen_port)},
          {"origin", o->listen_origin},
          {"token", !o->net.job_token.empty()}};
}

json Trainer() {
  char name[] = "rs-train";
  char* argv[] = {name, nullptr};
  rs::StatusOr<rs::trainer::TrainOptions> o = rs::trainer::ParseOptions(1, argv, rs::ProcessEnv(), /*gpu_built=*/false);
  if (!o.ok()) return {{"error", o.status().message()}};
  return {{"reducers", Endpoints(o->reducers)},
          {"rank", o->rank},
          {"world", o->world},
          {"master", o->master_host.empty() ? "" : o->master_host + ":" + std::to_string(o->master_port)},
          {"token", !o->job_token.empty()}};
}

}  // namespace

int main() {
  std::cout << json{{"plugin", Plugin()}, {"reducerd", Reducerd()}, {"rs-train", Trainer()}}.dump() << "\n";
  return 0;
}
