// LD_PRELOAD for a child process of a test built with sanitizers. ASan
// insists that its runtime come first in the library list, so a child that
// preloads a library (the plugin) must preload this process's sanitizer
// runtimes before it; in a build without sanitizers the value is the entry.
//
// Thread-safety: reads the loaded-library list (dl_iterate_phdr); safe from
// any thread.
#pragma once

#include <string>

namespace rs::testing {

// "<runtimes>:entry", or `entry` when no sanitizer runtime is loaded.
std::string PreloadAfterSanitizers(const std::string& entry);

}  // namespace rs::testing
