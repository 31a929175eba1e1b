// Prints a Markdown table of reducerd's settings from the registry, so the
// documentation (docs/reference/settings.md) is regenerated rather than
// edited by hand:
//   reducerd_settings_table          > the data plane's table
//   reducerd_settings_table control  > the control plane's table
#include <cstdio>
#include <cstring>

#include "server/reducerd_settings.h"

int main(int argc, char** argv) {
  unsigned table = rs::server::kReadmeTable;
  if (argc == 2 && std::strcmp(argv[1], "control") == 0) {
    table = rs::server::kControlPlaneTable;
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: reducerd_settings_table [control]\n");
    return 2;
  }
  std::fputs(rs::SettingsMarkdownTable(rs::server::ReducerdSettings(), table).c_str(), stdout);
  return 0;
}
