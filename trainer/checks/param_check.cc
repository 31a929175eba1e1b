#include "trainer/checks/param_check.h"

#include <cstdio>
#include <cstring>

#include "trainer/data/rng.h"

namespace rs::trainer {
namespace {

std::string Hex(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

uint64_t ParameterHash(const float* params, size_t n) {
  // Four independent lanes over pairs of floats; each lane's step is a
  // bijection of its state, so one changed word always changes the result.
  constexpr uint64_t kMul = 0x100000001B3ull * 0x9E3779B1ull | 1;
  uint64_t h[4] = {Mix64(n), Mix64(n + 1), Mix64(n + 2), Mix64(n + 3)};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w[4];
    std::memcpy(w, params + i, sizeof(w));
    for (int l = 0; l < 4; ++l) h[l] = (h[l] ^ w[l]) * kMul;
  }
  for (; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, params + i, sizeof(w));
    h[0] = (h[0] ^ w) * kMul;
  }
  return Mix64(h[0] ^ Mix64(h[1] ^ Mix64(h[2] ^ Mix64(h[3]))));
}

std::vector<uint64_t> CheckContribution(uint32_t rank, uint32_t world, uint64_t hash, uint64_t verify_failed_step) {
  std::vector<uint64_t> v(static_cast<size_t>(world) + 1, 0);
  v[rank] = hash;
  if (rank == 0) v[world] = verify_failed_step;
  return v;
}

Status EvaluateCheck(const std::vector<uint64_t>& summed, uint32_t world, uint64_t step) {
  if (summed.size() != static_cast<size_t>(world) + 1) {
    return Status(Code::kInternal, "parameter check: wrong vector size");
  }
  std::string differ;
  size_t n = 0;
  for (uint32_t r = 1; r < world; ++r) {
    if (summed[r] == summed[0]) continue;
    if (n++ < 8) differ += (differ.empty() ? "" : ", ") + std::to_string(r) + " (" + Hex(summed[r]) + ")";
  }
  if (n > 8) differ += " and " + std::to_string(n - 8) + " more";
  if (n > 0) {
    return Status(Code::kMismatch, "after step " + std::to_string(step) + " the parameters of rank" +
                                       (n == 1 ? " " : "s ") + differ + " differ from rank 0's (" + Hex(summed[0]) +
                                       "): the ranks no longer train the same model");
  }
  if (summed[world] != 0) {
    return Status(Code::kMismatch, "--verify: after step " + std::to_string(summed[world]) +
                                       " the parameters differ from the single-process reference (rank 0 "
                                       "printed the first differing parameter)");
  }
  return Status::Ok();
}

}  // namespace rs::trainer
