// Byte sizes for the tests' buffers, limits and messages.
#pragma once

#include <cstddef>

namespace rs::testing {

inline constexpr size_t kKiB = size_t{1} << 10;
inline constexpr size_t kMiB = size_t{1} << 20;
inline constexpr size_t kGiB = size_t{1} << 30;

}  // namespace rs::testing
