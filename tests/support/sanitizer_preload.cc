#include "tests/support/sanitizer_preload.h"

#include <link.h>

#include <filesystem>
#include <vector>

namespace rs::testing {

std::string PreloadAfterSanitizers(const std::string& entry) {
  std::vector<std::string> runtimes;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const std::string base = std::filesystem::path(name).filename().string();
        for (const char* prefix : {"libasan", "libtsan", "libubsan", "liblsan", "libclang_rt."}) {
          if (base.rfind(prefix, 0) == 0) static_cast<std::vector<std::string>*>(data)->push_back(name);
        }
        return 0;
      },
      &runtimes);
  std::string list;
  for (const std::string& rt : runtimes) list += rt + ":";
  return list + entry;
}

}  // namespace rs::testing
