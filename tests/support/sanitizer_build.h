// Whether this test binary was built with AddressSanitizer, for the few
// assertions it changes (resident memory, the sizes of exported globals).
// GCC defines __SANITIZE_ADDRESS__; clang 14 answers only __has_feature.
#pragma once

namespace rs::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace rs::testing
