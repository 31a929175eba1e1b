// Whether this test binary was built with AddressSanitizer, for the few
// assertions it changes (resident memory, the sizes of exported globals).
// What counts is the code under test and the runtime, not the test file's
// own flags (CI's sanitizer build compiles test files without the
// sanitizers: tests/CMakeLists.txt), so the build says so first
// (RS_ADDRESS_SANITIZER_BUILD); else GCC defines __SANITIZE_ADDRESS__ and
// clang 14 answers __has_feature.
#pragma once

namespace rs::testing {

#if defined(RS_ADDRESS_SANITIZER_BUILD) || defined(__SANITIZE_ADDRESS__)
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
