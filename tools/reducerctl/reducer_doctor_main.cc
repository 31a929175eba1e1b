// reducer-doctor: `reducerctl doctor` for training images. The same flags,
// checks, report and exit status (tools/reducerctl/doctor_cli.h), in a
// program that needs only glibc, libstdc++ and libgcc_s, like the plugin it
// checks: it ships in the plugin's package (libnccl-net-reducer) and image
// (/opt/reducer/bin), where reducerctl, which links gRPC, is not.
// Exit status: 0 the reducers would be used, 1 they would not, 2 bad usage.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "tools/reducerctl/doctor_cli.h"

int main(int argc, char** argv) {
  CLI::App app{std::string("reducer-doctor: ") + rs::reducerctl::kDoctorDescription +
               ". The same check as `reducerctl doctor`."};
  app.set_version_flag("--version", "reducer-doctor 0.1.0");
  rs::reducerctl::DoctorCommandLine line;
  bool json = false;
  rs::reducerctl::AddDoctorFlags(app, line);
  app.add_flag("--json", json, "Print one JSON object instead of the report");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "reducer-doctor: %s\nRun 'reducer-doctor --help' for the flags.\n", e.what());
    return 2;
  }
  return rs::reducerctl::RunDoctorCommand(line, json, "reducer-doctor", std::cout);
}
