// reducerd's settings registry: every flag with its environment variable,
// default, description and deprecated old names. options.cc builds the
// command line and Options from it; the README's table and the control
// plane's table in docs/control-plane.md are generated from it
// (reducerd_settings_table) and a test checks both documents.
//
// Thread-safety: an immutable list, built on first use.
#pragma once

#include <vector>

#include "common/settings.h"

namespace rs::server {

// Which documentation table lists a setting (SettingInfo::tables).
inline constexpr unsigned kReadmeTable = 1;        // README.md, "Running a reducer"
inline constexpr unsigned kControlPlaneTable = 2;  // docs/control-plane.md

const std::vector<SettingInfo>& ReducerdSettings();

}  // namespace rs::server
