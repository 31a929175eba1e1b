// Little-endian field readers and writers for the wire format. Bounds are the
// caller's business (the decoders check sizes before reading). Pure functions.
#pragma once

#include <cstdint>
#include <cstring>

namespace rs::protocol {

template <typename T>
inline void PutLE(uint8_t* p, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(static_cast<uint64_t>(value) >> (8 * i));
}

template <typename T>
inline T GetLE(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace rs::protocol
