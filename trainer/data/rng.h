// A small counter-based random number generator for the synthetic data and
// the initial parameters. A stream is named by (seed, stream id), so any
// rank's batch for any step can be regenerated on its own, on any machine:
// uniform floats are built from 24 random bits with exact arithmetic.
//
// Thread-safety: a value type; one Rng per thread.
#pragma once

#include <cstdint>

namespace rs::trainer {

// SplitMix64's finaliser: a bijective mix of 64 bits.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream) : state_(Mix64(seed ^ Mix64(stream ^ 0x5EEDull))) {}

  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return Mix64(state_);
  }
  // Uniform in [-1, 1), a multiple of 2^-23: exact on every machine.
  float Uniform() { return static_cast<float>(static_cast<int32_t>(Next() >> 40) - (1 << 23)) * 0x1p-23f; }

 private:
  uint64_t state_;
};

// Stream ids, so that no two uses of one seed share a stream.
inline uint64_t StreamId(uint64_t kind, uint64_t a, uint64_t b = 0) {
  return Mix64(kind * 0x100000001B3ull ^ Mix64(a ^ Mix64(b)));
}

}  // namespace rs::trainer
