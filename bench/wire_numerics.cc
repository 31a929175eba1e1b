// wire_numerics: how far each way of summing float32 gradients over n ranks
// lands from the exact sum, for the float32 path, the 16-bit wire formats
// (REDUCER_WIRE_DTYPE) and a bfloat16 ring as NCCL and PyTorch's
// bf16_compress_hook run it. The reducer's side goes through the very kernels
// reducerd calls (kernels.h), in the order session.cc calls them; the ring is
// emulated with half.h, the reference those kernels are tested against.
// Single-threaded and deterministic: a fixed seed and a generator of its own,
// so a table is the same on every run and every machine of one libm.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/dtype.h"
#include "common/half.h"
#include "kernels/kernels.h"

namespace {

using rs::DataType;
using rs::ReduceOp;

// splitmix64: a generator whose output is fixed by its definition, unlike
// std::normal_distribution's, which each standard library draws its own way.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1p-53; }  // (0, 1)
  double Normal() {  // Box-Muller; one value per call keeps the stream simple
    return std::sqrt(-2.0 * std::log(Uniform())) * std::cos(6.283185307179586 * Uniform());
  }
  double StudentT(int dof) {
    double chi2 = 0;
    for (int i = 0; i < dof; ++i) {
      const double z = Normal();
      chi2 += z * z;
    }
    return Normal() / std::sqrt(chi2 / dof);
  }
};

// The inputs: ranks x count float32 values, and a scale group per element
// (errors are normalised within a group; see Errors).
struct Inputs {
  std::vector<std::vector<float>> ranks;
  std::vector<int> group;
  int groups = 1;
};

constexpr double kGradScale = 0x1p-10;  // a typical gradient magnitude (~1e-3)
constexpr int kMixLow = -20;
int mix_high = 10;  // --mix-high: float16 overflows from 2^16 on

Inputs Make(const std::string& kind, int n, size_t count, uint64_t seed) {
  const uint64_t kind_id = kind == "normal" ? 1 : kind == "heavy" ? 2 : kind == "mix" ? 3 : 4;
  Rng rng{seed * 1000003u + static_cast<uint64_t>(n) * 7919u + kind_id * 104729u};
  Inputs in;
  in.ranks.assign(n, std::vector<float>(count));
  in.group.assign(count, 0);
  for (size_t i = 0; i < count; ++i) {
    if (kind == "normal") {
      for (int r = 0; r < n; ++r) in.ranks[r][i] = static_cast<float>(kGradScale * rng.Normal());
    } else if (kind == "heavy") {
      for (int r = 0; r < n; ++r) in.ranks[r][i] = static_cast<float>(kGradScale * rng.StudentT(3));
    } else if (kind == "mix") {
      // One parameter's gradient has a similar magnitude on every rank; the
      // parameters differ by up to 2^30 from each other.
      const int k = kMixLow + static_cast<int>(i % (mix_high - kMixLow + 1));
      in.group[i] = k - kMixLow;
      for (int r = 0; r < n; ++r) in.ranks[r][i] = static_cast<float>(std::ldexp(rng.Normal(), k));
    } else {  // cancel: rank 2j sends x, rank 2j+1 sends -x + small (2^-8 of x's scale)
      for (int r = 0; r + 1 < n; r += 2) {
        const float x = static_cast<float>(kGradScale * rng.Normal());
        in.ranks[r][i] = x;
        in.ranks[r + 1][i] = -x + static_cast<float>(kGradScale * 0x1p-8 * rng.Normal());
      }
      if (n % 2) in.ranks[n - 1][i] = static_cast<float>(kGradScale * rng.Normal());
    }
  }
  if (kind == "mix") in.groups = mix_high - kMixLow + 1;
  return in;
}

// Exact to float64's precision: TwoSum keeps what each addition drops.
std::vector<double> ExactSum(const Inputs& in) {
  const size_t count = in.group.size();
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    double s = 0, c = 0;
    for (const auto& r : in.ranks) {
      const double x = r[i], t = s + x, bp = t - s;
      c += (s - (t - bp)) + (x - bp);
      s = t;
    }
    out[i] = s + c;
  }
  return out;
}

std::vector<const void*> Pointers(const std::vector<std::vector<float>>& v) {
  std::vector<const void*> p;
  for (const auto& r : v) p.push_back(r.data());
  return p;
}

// float32 path: the reducer's kernel, rank order.
std::vector<float> Float32Path(const Inputs& in) {
  std::vector<float> out(in.group.size());
  const auto p = Pointers(in.ranks);
  rs::kernels::Reduce(DataType::kFloat32, ReduceOp::kSum, out.data(), p.data(), p.size(), out.size());
  return out;
}

bool Finite(DataType wire, uint16_t v) {
  return std::isfinite(wire == DataType::kFloat16 ? rs::HalfToFloat(v) : rs::Bfloat16ToFloat(v));
}

// The wire: each rank narrows (a piece that cannot goes as float32, its
// finite values still rounded); the reducer sums in float32 in rank order and
// narrows once, or sends float32 where a sum does not fit. `fallbacks` counts
// the values that travelled as float32 (rank inputs and results).
std::vector<float> WirePath(DataType wire, const Inputs& in, size_t* fallbacks) {
  const size_t count = in.group.size();
  const size_t n = in.ranks.size();
  std::vector<std::vector<uint16_t>> narrow(n, std::vector<uint16_t>(count));
  std::vector<std::vector<float>> wide(n);
  std::vector<const void*> inputs(n);
  std::vector<DataType> types(n, wire);
  bool all_wire = true;
  for (size_t r = 0; r < n; ++r) {
    inputs[r] = narrow[r].data();
    if (rs::kernels::NarrowFloat32(wire, in.ranks[r].data(), narrow[r].data(), count)) continue;
    wide[r] = in.ranks[r];
    rs::kernels::WidenWhereFinite(wire, narrow[r].data(), wide[r].data(), count);
    for (size_t i = 0; i < count; ++i) *fallbacks += !Finite(wire, narrow[r][i]);
    inputs[r] = wide[r].data();
    types[r] = DataType::kFloat32;
    all_wire = false;
  }
  std::vector<uint16_t> rounded(count);
  std::vector<float> out(count);
  if (all_wire) {
    rs::kernels::Reduce(wire, ReduceOp::kSum, rounded.data(), inputs.data(), n, count);
    if (rs::kernels::AllFinite(wire, rounded.data(), count)) {
      rs::kernels::WidenToFloat32(wire, rounded.data(), out.data(), count);
      return out;
    }
  }
  rs::kernels::SumToFloat32(wire, out.data(), inputs.data(), types.data(), n, count);
  if (rs::kernels::NarrowFloat32(wire, out.data(), rounded.data(), count)) {
    rs::kernels::WidenToFloat32(wire, rounded.data(), out.data(), count);
    return out;
  }
  rs::kernels::WidenWhereFinite(wire, rounded.data(), out.data(), count);
  for (size_t i = 0; i < count; ++i) *fallbacks += !Finite(wire, rounded[i]);
  return out;
}

// The rule the wire promises, element by element, in plain scalar code:
// q(sum over ranks in rank order, in float32, of q(x_r)), where q rounds to the
// wire type where the result is finite and keeps the float32 value elsewhere.
// The table is only worth reading if the kernels' path gives these very bits.
bool MatchesScalarRule(DataType wire, const Inputs& in, const std::vector<float>& got) {
  auto q = [wire](float v) {
    const float r = wire == DataType::kFloat16 ? rs::HalfToFloat(rs::FloatToHalf(v))
                                               : rs::Bfloat16ToFloat(rs::FloatToBfloat16(v));
    return std::isfinite(r) ? r : v;
  };
  for (size_t i = 0; i < got.size(); ++i) {
    float acc = 0;
    for (size_t r = 0; r < in.ranks.size(); ++r) acc = r == 0 ? q(in.ranks[0][i]) : acc + q(in.ranks[r][i]);
    const float want = q(acc);
    if (std::memcmp(&want, &got[i], sizeof want) != 0) return false;
  }
  return true;
}

// A bfloat16 ring's reduce-scatter: inputs rounded to bfloat16, each of the
// n - 1 additions done in float32 and rounded to bfloat16. Chunk c of n starts
// at rank c and goes round (c, c+1, ..., c-1 mod n), as a ring's chunks do.
std::vector<float> Bf16Ring(const Inputs& in) {
  const size_t count = in.group.size();
  const size_t n = in.ranks.size();
  auto q = [](float v) { return rs::Bfloat16ToFloat(rs::FloatToBfloat16(v)); };
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    const size_t first = i * n / count;
    float acc = q(in.ranks[first][i]);
    for (size_t k = 1; k < n; ++k) acc = q(acc + q(in.ranks[(first + k) % n][i]));
    out[i] = acc;
  }
  return out;
}

// rel_i = |approx_i - exact_i| / max(|exact_i|, RMS of the exact sums of i's
// scale group): a relative error, except that an element whose sum happens to
// cancel to near zero is judged against the typical sum of its group, so that
// one near-zero sum among 65536 does not make the figure. In the mix each
// scale is its own group, judged against its own magnitude.
struct Errors {
  double rms = 0, max = 0;
};

Errors Measure(const std::vector<float>& approx, const std::vector<double>& exact, const Inputs& in) {
  std::vector<double> sq(in.groups, 0.0);
  std::vector<size_t> members(in.groups, 0);
  for (size_t i = 0; i < exact.size(); ++i) {
    sq[in.group[i]] += exact[i] * exact[i];
    ++members[in.group[i]];
  }
  Errors e;
  double sum_sq = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const int g = in.group[i];
    const double scale = std::sqrt(sq[g] / static_cast<double>(members[g]));
    const double rel = std::fabs(static_cast<double>(approx[i]) - exact[i]) / std::max(std::fabs(exact[i]), scale);
    sum_sq += rel * rel;
    e.max = std::max(e.max, rel);
  }
  e.rms = std::sqrt(sum_sq / static_cast<double>(exact.size()));
  return e;
}

struct Row {
  int n;
  Errors f32, bf16, fp16, ring;
  size_t fp16_fallbacks = 0;
};

std::string Cell(const Errors& e) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2e / %.2e", e.rms, e.max);
  return buf;
}

const char* Describe(const std::string& kind) {
  if (kind == "normal") return "normal, sigma 2^-10";
  if (kind == "heavy") return "Student-t, 3 degrees of freedom, scale 2^-10";
  if (kind == "mix") {
    static std::string text;
    text = "normal, each element's scale 2^k (k = -20.." + std::to_string(mix_high) + ", the same on every rank)";
    return text.c_str();
  }
  return "cancelling pairs: rank 2j sends x, rank 2j+1 sends -x + s (x: sigma 2^-10, s: 2^-8 of that)";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "wire_numerics: the relative error of summing float32 values over n ranks, against the exact "
      "(float64, compensated) sum: the reducers' float32 path, their bfloat16 and float16 wire "
      "(each rank rounds once, the reducer sums in float32 in rank order and rounds once), and a "
      "bfloat16 ring (inputs rounded to bfloat16, each of the n - 1 additions rounded to bfloat16, "
      "as NCCL and PyTorch's bf16_compress_hook do). Error of an element: |approx - exact| divided "
      "by max(|exact|, the RMS of the exact sums of its scale group: every element, or in the 'mix' "
      "input the elements of one scale); each cell is RMS / max of that over the elements. Prints "
      "markdown tables. Exit status 1 when the wire path (reducerd's kernels) differs from the "
      "scalar rule q(sum q(x)) by a bit, and with --check when the bfloat16 wire's error (RMS or "
      "max) is above the ring's for some n and input."};
  std::vector<int> ranks{2, 4, 8, 16, 32, 64};
  std::vector<std::string> kinds{"normal", "heavy", "mix", "cancel"};
  size_t count = 1 << 16;
  uint64_t seed = 1;
  bool check = false, quick = false;
  app.add_option("--ranks", ranks, "Numbers of ranks")->delimiter(',')->check(CLI::Range(1, 4096));
  app.add_option("--inputs", kinds, "Inputs: normal, heavy, mix, cancel")
      ->delimiter(',')
      ->check(CLI::IsMember({"normal", "heavy", "mix", "cancel"}));
  app.add_option("--elements", count, "Elements per rank")->check(CLI::Range(size_t{1}, size_t{1} << 24));
  app.add_option("--seed", seed, "Seed of the inputs");
  app.add_option("--mix-high", mix_high, "Largest scale 2^k of the 'mix' input (16 and up: float16 overflows)")
      ->check(CLI::Range(-20, 100));
  app.add_flag("--check", check, "Exit 1 unless the bfloat16 wire's error is at or below the ring's everywhere");
  app.add_flag("--quick", quick, "8 ranks, the normal input, 4096 elements, --check (a smoke test)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    ranks = {8};
    kinds = {"normal"};
    count = 4096;
    check = true;
  }

  bool held = true;
  std::printf("# wire_numerics: %zu elements per rank, seed %llu, cells: RMS / max relative error\n", count,
              static_cast<unsigned long long>(seed));
  for (const auto& kind : kinds) {
    std::vector<Row> rows;
    for (int n : ranks) {
      const Inputs in = Make(kind, n, count, seed);
      const auto exact = ExactSum(in);
      Row row{n, {}, {}, {}, {}};
      size_t unused = 0;
      row.f32 = Measure(Float32Path(in), exact, in);
      const auto bf16 = WirePath(DataType::kBfloat16, in, &unused);
      const auto fp16 = WirePath(DataType::kFloat16, in, &row.fp16_fallbacks);
      if (!MatchesScalarRule(DataType::kBfloat16, in, bf16) || !MatchesScalarRule(DataType::kFloat16, in, fp16)) {
        std::fprintf(stderr, "wire_numerics: the kernels' wire path differs from q(sum q(x)) for %s, n = %d\n",
                     kind.c_str(), n);
        return 1;
      }
      row.bf16 = Measure(bf16, exact, in);
      row.fp16 = Measure(fp16, exact, in);
      row.ring = Measure(Bf16Ring(in), exact, in);
      held = held && row.bf16.rms <= row.ring.rms && row.bf16.max <= row.ring.max;
      rows.push_back(row);
    }
    std::printf("\n## %s: %s\n\n", kind.c_str(), Describe(kind));
    std::printf("| n | float32 | bfloat16 wire | float16 wire | bfloat16 ring | ring / bf16 wire (RMS) | "
                "float16 values sent as float32 |\n|---|---|---|---|---|---|---|\n");
    for (const auto& r : rows) {
      std::printf("| %d | %s | %s | %s | %s | %.2f | %zu |\n", r.n, Cell(r.f32).c_str(), Cell(r.bf16).c_str(),
                  Cell(r.fp16).c_str(), Cell(r.ring).c_str(), r.bf16.rms > 0 ? r.ring.rms / r.bf16.rms : 0.0,
                  r.fp16_fallbacks);
    }
    if (rows.size() > 1) {
      std::printf("\nFrom n = %d to n = %d the RMS error changes x%.2f on the bfloat16 wire, x%.2f in the ring.\n",
                  rows.front().n, rows.back().n, rows.back().bf16.rms / rows.front().bf16.rms,
                  rows.back().ring.rms / rows.front().ring.rms);
    }
  }
  std::printf("\nbfloat16 wire at or below the bfloat16 ring (RMS and max) for every n and input: %s\n",
              held ? "yes" : "NO");
  return check && !held ? 1 : 0;
}
