// The built programs that tests run as child processes, in the build tree
// (RS_BINARY_DIR, which tests/CMakeLists.txt defines for the test binaries).
#pragma once

#include <string>

namespace rs::testing {

inline const std::string kReducerd = std::string(RS_BINARY_DIR) + "/server/reducerd";
inline const std::string kCtl = std::string(RS_BINARY_DIR) + "/tools/reducerctl/reducerctl";

}  // namespace rs::testing
