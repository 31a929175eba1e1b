// The payload of an encoded frame (what follows its header): for the tests
// that decode what an Encode* function wrote.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "protocol/wire.h"

namespace rs::protocol {

inline std::span<const uint8_t> Payload(const std::vector<uint8_t>& frame) {
  return std::span<const uint8_t>(frame).subspan(kHeaderBytes);
}

}  // namespace rs::protocol
