// The doctor's command line, shared by `reducerctl doctor` (the reducer
// image and the reduction-server package, beside the control-plane
// commands) and `reducer-doctor` (the plugin's package and image, and so
// every training image: no gRPC). Both take the same flags and print the
// same report; only the program name in error messages differs.
#pragma once

#include <ostream>
#include <string>

#include "tools/reducerctl/doctor.h"

// CLI11 is header-only and costs about 10 CPU-seconds in every file that
// includes it: the flags' own file does, its users need only the name.
namespace CLI {
class App;
}  // namespace CLI

namespace rs::reducerctl {

// What `doctor` says it does (reducerctl's subcommand help, reducer-doctor's
// own description).
extern const char* const kDoctorDescription;

// The flags as parsed; turned into DoctorOptions by RunDoctorCommand.
struct DoctorCommandLine {
  DoctorOptions options;
  std::string reducer_timeout = "3s";
};

// Adds --plugin, --nccl and --reducer-timeout to `command` (reducerctl's
// `doctor` subcommand, or reducer-doctor's app). --json is the caller's:
// reducerctl's is global.
void AddDoctorFlags(CLI::App& command, DoctorCommandLine& line);

// Runs the doctor with the process environment and writes the report (text
// or JSON) to `out`. Returns the exit status: 0 the reducers would be used,
// 1 they would not, 2 a bad flag (said on stderr, after `program`).
int RunDoctorCommand(const DoctorCommandLine& line, bool json, const std::string& program, std::ostream& out);

}  // namespace rs::reducerctl
