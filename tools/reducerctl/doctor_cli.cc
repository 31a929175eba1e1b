#include "tools/reducerctl/doctor_cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "common/units.h"

namespace rs::reducerctl {

const char* const kDoctorDescription =
    "Run in a training image with the job's environment: will NCCL use the reducers? Checks the plugin, "
    "NCCL, its settings and every reducer; exit 0 only when the reducers would be used";

void AddDoctorFlags(CLI::App& command, DoctorCommandLine& line) {
  command.add_option("--plugin", line.options.plugin_path,
                     "Check this libnccl-net-reducer.so instead of the one NCCL's search finds");
  command.add_option("--nccl", line.options.nccl_path,
                     "The job's libnccl.so.2 (default: the loader's, else a pip-installed PyTorch's)");
  command.add_option("--reducer-timeout", line.reducer_timeout, "How long each reducer has to answer")
      ->capture_default_str();
}

int RunDoctorCommand(const DoctorCommandLine& line, bool json, const std::string& program, std::ostream& out) {
  auto reducer_timeout = ParseDuration(line.reducer_timeout);
  if (!reducer_timeout.ok() || reducer_timeout->count() <= 0) {
    std::fprintf(stderr, "%s: --reducer-timeout: '%s' is not a positive duration (e.g. 3s)\n", program.c_str(),
                 line.reducer_timeout.c_str());
    return 2;
  }
  DoctorOptions options = line.options;
  options.reducer_timeout = *reducer_timeout;
  const DoctorReport report = RunDoctor(options, [](const char* name) { return std::getenv(name); });
  out << (json ? DoctorJson(report) : RenderDoctor(report));
  return report.verdict.will_be_used ? 0 : 1;
}

}  // namespace rs::reducerctl
