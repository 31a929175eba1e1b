// The Python package's settings: the client library's options built from
// keyword arguments and the environment, under the names the NCCL plugin
// reads (REDUCER_ADDRS or CLUSTER_SPEC, REDUCER_JOB_TOKEN[_FILE],
// REDUCER_LIVENESS_TIMEOUT, ...), parsed by the plugin's own code
// (nccl_plugin/config/plugin_config.h) so a value means the same, with the
// same bounds and messages, whichever way in a job takes. The plugin gets
// its rank, world and session from NCCL; the package adds them here, with
// their own small registry (RANK, WORLD_SIZE: torchrun's; REDUCER_SESSION).
//
// A keyword argument stands for its variable: `liveness_timeout="1s"` is
// REDUCER_LIVENESS_TIMEOUT=1s and wins over the environment. Giving one of
// a pair of alternatives (REDUCER_ADDRS / CLUSTER_SPEC, REDUCER_JOB_TOKEN /
// REDUCER_JOB_TOKEN_FILE) hides the other from the environment, so an
// argument is never overridden by a variable the caller did not pass.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/settings.h"
#include "common/status.h"

namespace rs::python {

struct BindingOptions {
  client::ClientOptions client;
  std::string session_name;     // what the session id was derived from
  std::string reducers_source;  // "REDUCER_ADDRS", "CLUSTER_SPEC workerpool2"
};

// One variable the package accepts, for Python's keyword names and help.
struct BindingVariable {
  std::string name;           // "REDUCER_LIVENESS_TIMEOUT"
  std::string default_value;  // "" when unset by default
  std::string doc;
};
const std::vector<BindingVariable>& BindingVariables();

// What NCCL gives the plugin and the package must be told (RANK, WORLD_SIZE,
// REDUCER_SESSION): the package's own registry; the rest it takes from the
// plugin's.
const std::vector<SettingInfo>& OwnRegistry();

// `given`: variables set by keyword argument (by variable name); `env`: the
// process environment (rs::ProcessEnv()) or a map in tests. Errors are
// kInvalidArgument naming the variable.
StatusOr<BindingOptions> OptionsFromSettings(const std::map<std::string, std::string>& given,
                                             const EnvLookup& env);

}  // namespace rs::python
