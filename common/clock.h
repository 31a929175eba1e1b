// The one clock every timeout and duration in the project is measured with:
// monotonic, so wall-clock changes never fire or stall a deadline.
#pragma once

#include <chrono>

namespace rs {

using Clock = std::chrono::steady_clock;

}  // namespace rs
