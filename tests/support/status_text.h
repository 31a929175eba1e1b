// Whether a Status's message says something: for the tests that check what
// an error names rather than its whole text.
#pragma once

#include <string>

#include "common/status.h"

namespace rs::testing {

inline bool Has(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

}  // namespace rs::testing
