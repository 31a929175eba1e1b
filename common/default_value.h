// A default value kept beside the text a settings registry shows for it
// ("64KiB", "60s", "auto"), so that each default is written once: the
// structs start from `value`, the registries (flags, environment, --help,
// docs/reference/settings.md) show and parse `text`, and tests check that the
// two agree (client/client_defaults.h, server/core/server_defaults.h,
// common/tcp_tuning.h).
#pragma once

namespace rs {

template <typename T>
struct Default {
  T value;
  const char* text;
};

}  // namespace rs
