#include "tools/reducerctl/doctor.h"

#include <cstdio>
#include <future>
#include <map>
#include <memory>

namespace rs::reducerctl {
namespace {

// The values of NCCL's configuration files (param.cc, setEnvFile): '#' lines
// skipped, the name before the first '=', the value the rest of the line.
// NCCL applies them with setenv(..., 0): the environment wins, then the
// first file that sets a name.
class NcclConf {
 public:
  explicit NcclConf(const EnvLookup& env) {
    const char* conf = env("NCCL_CONF_FILE");
    const char* home = env("HOME");
    if (conf != nullptr && conf[0] != '\0') {
      Read(conf);
    } else if (home != nullptr && home[0] != '\0') {
      Read(std::string(home) + "/.nccl.conf");
    }
    Read("/etc/nccl.conf");
  }
  const char* Get(const char* name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : it->second.c_str();
  }

 private:
  void Read(const std::string& path) {
    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "re"), std::fclose);
    if (file == nullptr) return;
    char line[4096];
    for (int lines = 0; lines < 10000 && std::fgets(line, sizeof(line), file.get()) != nullptr; ++lines) {
      std::string text(line);
      if (text.empty() || text[0] == '#') continue;
      if (text.back() == '\n') text.pop_back();
      const size_t eq = text.find('=');
      if (eq == std::string::npos) continue;
      values_.emplace(text.substr(0, eq), text.substr(eq + 1));  // the first file wins
    }
  }
  std::map<std::string, std::string> values_;
};

std::optional<std::string> Value(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Probes every reducer at once, so the doctor takes one timeout, not one per reducer.
std::vector<Check> ProbeReducers(const plugin::CollNetConfig& config, std::chrono::milliseconds timeout) {
  std::vector<std::future<StatusOr<client::ProbeResult>>> probes;
  for (const client::Endpoint& endpoint : config.reducers) {
    client::ProbeOptions options{endpoint, config.job_token, config.client.tls, timeout};
    probes.push_back(std::async(std::launch::async, [options] { return client::ProbeReducer(options); }));
  }
  std::vector<Check> checks;
  for (size_t i = 0; i < probes.size(); ++i) checks.push_back(ReducerCheck(config.reducers[i], probes[i].get(), config));
  return checks;
}

}  // namespace

DoctorReport RunDoctor(const DoctorOptions& options, const EnvLookup& process_env) {
  const NcclConf conf(process_env);
  const EnvLookup env = [&](const char* name) -> const char* {
    const char* v = process_env(name);
    return v != nullptr ? v : conf.Get(name);
  };
  const plugin::Env plugin_env = plugin::Env::FromLookup(env);
  NcclSettings settings;
  settings.net_plugin = Value(env, "NCCL_NET_PLUGIN");
  settings.tuner_plugin = Value(env, "NCCL_TUNER_PLUGIN");
  settings.algo = Value(env, "NCCL_ALGO");
  settings.collnet = plugin::NcclCollNetSettingsFromEnv(plugin_env);
  if (const char* preload = process_env("LD_PRELOAD")) settings.preloaded = PreloadedNetPlugins(preload);

  DoctorReport report;
  auto& checks = report.checks;

  // NCCL first: its release decides how the plugin is searched for.
  StatusOr<NcclFound> nccl = FindNccl(options.nccl_path);
  const plugin::NcclRelease* release = nullptr;
  if (nccl.ok()) {
    release = plugin::FindNcclRelease(nccl->version);
    const auto known = plugin::NcclReleases();
    if (release == nullptr && nccl->version.major == 2 && nccl->version.minor > known.back().last_minor) {
      release = &known.back();
    }
    checks.push_back(NcclCheck(nccl->version, nccl->library->path(), release));
  } else {
    checks.push_back(NcclCheck(nccl.status(), "", nullptr));
  }
  // Without NCCL (or with one too old), the plugin is looked for as the newest release would.
  const plugin::NcclRelease& rules = release != nullptr ? *release : plugin::NcclReleases().back();

  NetPluginSearch search;
  const bool from_flag = !options.plugin_path.empty();
  if (from_flag) {
    StatusOr<std::unique_ptr<Library>> library = Library::Open(options.plugin_path);
    if (library.ok()) {
      search.tables = ReadTables(**library);
      search.library = std::move(library).value();
    } else {
      search.problems.push_back(library.status().message());
    }
  } else {
    search = FindNetPlugin(rules, settings.net_plugin);
  }
  checks.push_back(PluginCheck(search, settings, rules, from_flag));

  if (search.library != nullptr && release != nullptr) {
    checks.push_back(TablesCheck(search.tables, nccl->version, *release));
  }
  checks.push_back(CollNetEnableCheck(settings.collnet));
  if (release != nullptr) {
    const TunerLookup tuner = FindTuner(*release, settings.tuner_plugin, search.library.get());
    const std::string plugin_path = search.library != nullptr ? search.library->path() : "";
    checks.push_back(AlgorithmCheck(settings, nccl->version, *release, tuner, search.tables, plugin_path));
  }
  checks.push_back(NodesCheck(settings.collnet));

  const StatusOr<plugin::CollNetConfig> config = plugin::CollNetConfigFromEnv(plugin_env);
  checks.push_back(ReducerSettingsCheck(config, plugin_env));
  if (config.ok()) {
    for (Check& c : ProbeReducers(*config, options.reducer_timeout)) checks.push_back(std::move(c));
  }
  report.verdict = Decide(checks);
  return report;
}

std::string RenderDoctor(const DoctorReport& report) {
  std::string out;
  for (const Check& c : report.checks) {
    char level[8];
    std::snprintf(level, sizeof(level), "%-5s", CheckLevelName(c.level));
    out += std::string(level) + " " + c.name + ": " + c.text + "\n";
    if (!c.fix.empty()) out += "      fix: " + c.fix + "\n";
  }
  return out + report.verdict.line + "\n";
}

std::string DoctorJson(const DoctorReport& report) {
  std::string out = "{\"checks\":[";
  for (size_t i = 0; i < report.checks.size(); ++i) {
    const Check& c = report.checks[i];
    out += std::string(i == 0 ? "" : ",") + "{\"level\":" + JsonString(CheckLevelName(c.level)) +
           ",\"name\":" + JsonString(c.name) + ",\"text\":" + JsonString(c.text) + ",\"fix\":" + JsonString(c.fix) +
           "}";
  }
  out += "],\"will_be_used\":" + std::string(report.verdict.will_be_used ? "true" : "false") +
         ",\"verdict\":" + JsonString(report.verdict.line) + "}\n";
  return out;
}

}  // namespace rs::reducerctl
