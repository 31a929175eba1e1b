// reducerd's settings registry: every flag with its environment variable,
// default, description and deprecated old names. options.cc builds the
// command line and Options from it; the data plane's and the control
// plane's tables in docs/reference/settings.md are generated from it
// (reducerd_settings_table) and a test checks both.
//
// Thread-safety: an immutable list, built on first use.
#pragma once

#include <vector>

#include "common/settings.h"

namespace rs::server {

// Which documentation table lists a setting (SettingInfo::tables).
inline constexpr unsigned kReadmeTable = 1;        // docs/reference/settings.md, "reducerd"
inline constexpr unsigned kControlPlaneTable = 2;  // the same page, "reducerd's control plane"

const std::vector<SettingInfo>& ReducerdSettings();

}  // namespace rs::server
