#include "trainer/report/reporter.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/units.h"

namespace rs::trainer {
namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string Rate(double bytes_per_s) { return Fmt("%.3f GB/s", bytes_per_s / 1e9); }
std::string Ms(double s) { return Fmt(s < 0.01 ? "%.2f ms" : "%.1f ms", s * 1e3); }
std::string Pct(double share) { return Fmt("%.0f%%", share * 100); }

}  // namespace

std::string HexHash(uint64_t hash) {
  char buf[19];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

void Reporter::Line(const std::string& text) {
  std::fputs(text.c_str(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

void Reporter::Start(const StartInfo& i) {
  communicates_ = i.communicates;
  if (rank_ != 0) return;
  const uint64_t grad_bytes = i.params * sizeof(float);
  if (json_) {
    Line(nlohmann::ordered_json{{"event", "start"},
                                {"world", i.world},
                                {"backend", i.backend},
                                {"model", i.model},
                                {"params", i.params},
                                {"grad_bytes", grad_bytes},
                                {"buckets", i.buckets},
                                {"bucket_mb", i.bucket_mb},
                                {"batch", i.batch},
                                {"seed", i.seed},
                                {"lr", std::stod(Fmt("%g", i.lr))},
                                {"momentum", std::stod(Fmt("%g", i.momentum))},
                                {"steps", i.steps},
                                {"session", i.session},
                                {"verify", i.verify}}
             .dump());
    return;
  }
  Line("rs-train: " + std::to_string(i.world) + (i.world == 1 ? " rank, " : " ranks, ") + i.backend);
  Line("  model: " + i.model + ", " + Fmt("%.2f", static_cast<double>(i.params) / 1e6) + " M parameters, " +
       FormatBytes(grad_bytes) + " of float32 gradients in " + std::to_string(i.buckets) +
       (i.buckets == 1 ? " bucket" : " buckets") + " (cap " + Fmt("%g", i.bucket_mb) + " MiB, the first " +
       Fmt("%g", std::min(i.bucket_mb, 1.0)) + " MiB)");
  Line("  data: " + std::to_string(i.batch) + " examples per rank and step, seed " + std::to_string(i.seed) +
       "; SGD lr " + Fmt("%g", i.lr) + " momentum " + Fmt("%g", i.momentum) + "; " + std::to_string(i.steps) +
       " steps; " + i.session + (i.verify ? "; --verify on" : ""));
}

void Reporter::Step(const StepReport& r) {
  if (rank_ != 0) return;
  if (json_) {
    Line(nlohmann::ordered_json{{"event", "step"},
                                {"step", r.step},
                                {"steps", r.steps},
                                {"loss", r.loss},
                                {"step_ms", r.step_s * 1e3},
                                {"allreduce_ms", r.allreduce_s * 1e3},
                                {"algbw_gbs", r.algbw / 1e9},
                                {"comm_wait_share", r.comm_wait_share}}
             .dump());
    return;
  }
  char head[64];
  std::snprintf(head, sizeof(head), "step %6llu/%llu  loss %.6f", static_cast<unsigned long long>(r.step),
                static_cast<unsigned long long>(r.steps), r.loss);
  std::string line = std::string(head) + "  step " + Ms(r.step_s);
  if (communicates_) {
    line += "  allreduce " + Ms(r.allreduce_s) + "  algbw " + Rate(r.algbw) + "  comm wait " + Pct(r.comm_wait_share);
  }
  Line(line);
}

void Reporter::Check(uint64_t step, uint64_t hash) {
  if (rank_ != 0 || !json_) return;
  Line(nlohmann::ordered_json{{"event", "check"}, {"step", step}, {"hash", HexHash(hash)}, {"ok", true}}.dump());
}

void Reporter::Summary(const TrainSummary& s) {
  if (json_) {
    nlohmann::ordered_json j{{"event", "summary"},
                             {"rank", rank_},
                             {"steps", s.steps},
                             {"timed_steps", s.timed_steps},
                             {"first_loss", s.first_loss},
                             {"last_loss", s.last_loss},
                             {"wall_s", s.wall_s},
                             {"step_ms", s.step_s * 1e3},
                             {"allreduce_ms", s.allreduce_s * 1e3},
                             {"algbw_gbs", s.algbw / 1e9},
                             {"comm_wait_share", s.comm_wait_share},
                             {"grad_bytes", s.grad_bytes},
                             {"checks", s.checks},
                             {"verified", s.verified},
                             {"hash", HexHash(s.final_hash)}};
    if (s.failover) {
      const FailoverReport& f = *s.failover;
      j["failover"] = nlohmann::ordered_json{{"epoch", f.epoch},
                                             {"live_reducers", f.live_reducers},
                                             {"reducers", f.reducers},
                                             {"epochs_installed", f.epochs_installed},
                                             {"operations_redone", f.operations_redone},
                                             {"retained_peak_bytes", f.retained_peak_bytes}};
    }
    Line(j.dump());
    return;
  }
  if (rank_ != 0) {
    Line("rank " + std::to_string(rank_) + ": done, " + std::to_string(s.steps) + " steps, parameters " +
         HexHash(s.final_hash));
    return;
  }
  const double factor = s.last_loss > 0 ? s.first_loss / s.last_loss : 0;
  Line("done: " + std::to_string(s.steps) + " steps in " + Fmt("%.2f s", s.wall_s) + "; loss " +
       Fmt("%.6f", s.first_loss) + " -> " + Fmt("%.6f", s.last_loss) + " (" + Fmt("%.1f", factor) + "x lower)");
  std::string timing = "  per step (the last " + std::to_string(s.timed_steps) + ", rank 0): " + Ms(s.step_s);
  if (communicates_) {
    timing += ", all-reduce " + Ms(s.allreduce_s) + " (algbw " + Rate(s.algbw) + " for " + FormatBytes(s.grad_bytes) +
              "), waiting for communication " + Pct(s.comm_wait_share) + " of the step";
  }
  Line(timing);
  Line("  checks: parameters identical on every rank at " + std::to_string(s.checks) + " checks (final " +
       HexHash(s.final_hash) + ")" +
       (s.verified ? "; --verify: every step matched the single-process reference bit for bit" : ""));
  if (s.failover && s.failover->epochs_installed > 0) {
    const FailoverReport& f = *s.failover;
    Line("  failover: " + std::to_string(f.epochs_installed) +
         (f.epochs_installed == 1 ? " change of reducers" : " changes of reducers") + " survived (epoch " +
         std::to_string(f.epoch) + "), " + std::to_string(f.live_reducers) + " of " + std::to_string(f.reducers) +
         " reducers live at the end, " + std::to_string(f.operations_redone) +
         " all-reduces redone on the survivors, gradient copies held: " + FormatBytes(f.retained_peak_bytes) +
         " at most");
  }
}

void Reporter::Error(const Status& status) {
  std::fprintf(err_, "rs-train: rank %u: error: %s\n", rank_, status.ToString().c_str());
  std::fflush(err_);
  if (json_) Line(nlohmann::ordered_json{{"event", "error"}, {"rank", rank_}, {"message", status.ToString()}}.dump());
}

void Reporter::VerifyFailed(const Status& status) {
  std::fprintf(err_, "rs-train: rank %u: %s\n", rank_, status.message().c_str());
  std::fflush(err_);
  if (json_) Line(nlohmann::ordered_json{{"event", "verify"}, {"ok", false}, {"message", status.message()}}.dump());
}

}  // namespace rs::trainer
