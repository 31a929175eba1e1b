// Command-line parsing with CLI11 turned into a Status, shared by reducerd
// and reducer-bench: --help/--version print and give kCancelled (exit 0),
// a bad flag gives kInvalidArgument with CLI11's message naming it.
#pragma once

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace rs {

inline Status ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    app.exit(e);
    return Status(Code::kCancelled, "help printed");
  } catch (const CLI::ParseError& e) {
    return Status(Code::kInvalidArgument, e.what());
  }
  return Status::Ok();
}

}  // namespace rs
