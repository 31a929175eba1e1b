#include "trainer/ddp/train_loop.h"

#include <algorithm>

#include "common/clock.h"
#include "trainer/checks/param_check.h"

namespace rs::trainer {
namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Sums of the per-step figures over a range of steps.
struct Totals {
  uint64_t steps = 0;
  double step_s = 0, span_s = 0, wait_s = 0, bytes = 0;

  void Add(double step, const CommTiming& c) {
    ++steps;
    step_s += step;
    span_s += c.span_s;
    wait_s += c.wait_s;
    bytes += static_cast<double>(c.bytes);
  }
  double Mean(double sum) const { return steps ? sum / static_cast<double>(steps) : 0; }
  double Algbw() const { return span_s > 0 ? bytes / span_s : 0; }
  double WaitShare() const { return step_s > 0 ? wait_s / step_s : 0; }
};

}  // namespace

Status TrainLoop::RunStep(uint64_t step, double* loss) {
  data_.MakeBatch(o_.rank, step, o_.batch, &batch_);
  RS_RETURN_IF_ERROR(backend_.SetBatch(batch_));
  StatusOr<double> l = backend_.ForwardBackward([this](int layer) {
    for (size_t b : plan_.ReadyAfterLayer(layer)) RS_RETURN_IF_ERROR(backend_.StartAllReduce(plan_.buckets()[b]));
    return Status::Ok();
  });
  if (!l.ok()) {
    // A bucket that failed to start fails the step; still collect the rest.
    (void)backend_.FinishAllReduces();
    return l.status();
  }
  *loss = *l;
  StatusOr<CommTiming> comm = backend_.FinishAllReduces();
  if (!comm.ok()) return comm.status();
  last_comm_ = *comm;
  return backend_.ApplyUpdate(o_.sgd);
}

Status TrainLoop::CheckParameters(uint64_t steps_done, uint64_t* hash) {
  RS_RETURN_IF_ERROR(backend_.GetParameters(&params_));
  *hash = ParameterHash(params_.data(), params_.size());
  std::vector<uint64_t> v = CheckContribution(o_.rank, o_.world, *hash, verify_failed_step_);
  RS_RETURN_IF_ERROR(backend_.AllReduceSum(&v));
  RS_RETURN_IF_ERROR(EvaluateCheck(v, o_.world, steps_done));
  reporter_.Check(steps_done, *hash);
  return Status::Ok();
}

StatusOr<double> TrainLoop::MeanLoss(double local) {
  std::vector<double> v(o_.world, 0.0);
  v[o_.rank] = local;
  RS_RETURN_IF_ERROR(backend_.AllReduceSum(&v));
  double sum = 0;
  for (double x : v) sum += x;
  return sum / o_.world;
}

StatusOr<TrainSummary> TrainLoop::Run() {
  TrainSummary summary;
  summary.steps = o_.steps;
  // The first steps pay for page faults and connection warm-up.
  const uint64_t warmup = std::min<uint64_t>(2, o_.steps / 2);
  Totals timed, interval;
  const Clock::time_point start = Clock::now();
  uint64_t hash = 0;
  RS_RETURN_IF_ERROR(CheckParameters(0, &hash));
  ++summary.checks;
  for (uint64_t step = 0; step < o_.steps; ++step) {
    const uint64_t done = step + 1;
    const Clock::time_point t0 = Clock::now();
    double loss = 0;
    RS_RETURN_IF_ERROR(RunStep(step, &loss));
    const double step_s = Seconds(Clock::now() - t0);
    interval.Add(step_s, last_comm_);
    if (step >= warmup) timed.Add(step_s, last_comm_);
    summary.grad_bytes = last_comm_.bytes;

    if (reference_ != nullptr) {
      reference_->Step(step);
      RS_RETURN_IF_ERROR(backend_.GetParameters(&params_));
      if (Status st = reference_->Compare(params_, done); !st.ok() && verify_failed_step_ == 0) {
        verify_failed_step_ = done;
        reporter_.VerifyFailed(st);
      }
    }
    const bool last = done == o_.steps;
    if (step == 0 || done % o_.log_every == 0 || last) {
      StatusOr<double> mean = MeanLoss(loss);
      if (!mean.ok()) return mean.status();
      if (step == 0) summary.first_loss = *mean;
      summary.last_loss = *mean;
      reporter_.Step(StepReport{done, o_.steps, *mean, interval.Mean(interval.step_s), interval.Mean(interval.span_s),
                                interval.Algbw(), interval.WaitShare()});
      interval = Totals{};
    }
    if (last || (o_.check_every > 0 && done % o_.check_every == 0)) {
      RS_RETURN_IF_ERROR(CheckParameters(done, &hash));
      ++summary.checks;
    }
  }
  summary.wall_s = Seconds(Clock::now() - start);
  summary.timed_steps = timed.steps;
  summary.step_s = timed.Mean(timed.step_s);
  summary.allreduce_s = timed.Mean(timed.span_s);
  summary.algbw = timed.Algbw();
  summary.comm_wait_share = timed.WaitShare();
  summary.verified = reference_ != nullptr && verify_failed_step_ == 0;
  summary.final_hash = hash;
  return summary;
}

}  // namespace rs::trainer
