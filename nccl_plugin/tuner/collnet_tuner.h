// One communicator's tuner: NCCL creates it per communicator (tuner init)
// and asks it, for every collective, to adjust NCCL's cost table. It only
// ever decides all-reduce between the reducers and NCCL's own algorithms,
// with the cost model (cost_model.h); everything else is left to NCCL.
//
// Every input is the same on every rank of a communicator (node and rank
// counts from NCCL, the reducer list and the link rate, which CollNet's
// connect checks to agree on every node), so every rank chooses alike.
//
// Where CollNet may serve the communicator, the tuner also keeps its
// CollNetUsage (collnet_usage.h), which tells the user when no all-reduce
// reaches the reducers.
//
// Thread-safety: immutable but for the usage counts, which are atomic; NCCL
// may call from any thread. The Plugin owns every tuner and looks NCCL's
// pointer up before use (Plugin::FindTuner).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "nccl_plugin/opaque_object.h"
#include "nccl_plugin/tuner/collnet_usage.h"
#include "nccl_plugin/tuner/cost_model.h"

namespace rs::plugin {

class CollNetTuner final : public OpaqueObject {
 public:
  enum class Choice {
    kUnchanged,  // not ours to decide: NCCL's own tuning stands
    kReducers,   // make CollNet the cheapest entry
    kNccl,       // take CollNet out, NCCL picks among its own algorithms
  };

  // With no model (CollNet off, or a single node) the tuner changes nothing;
  // `why_inactive` says why, for the log.
  // `usage`: nullptr where nothing is to be watched (CollNet cannot serve
  // the communicator, and a warning has said why).
  CollNetTuner(std::optional<CostModel> model, std::string why_inactive,
               std::unique_ptr<CollNetUsage> usage = nullptr)
      : model_(std::move(model)), why_inactive_(std::move(why_inactive)), usage_(std::move(usage)) {}

  Choice ForAllReduce(size_t bytes) const;
  // The INFO line of tuner init.
  std::string Describe() const;
  const std::optional<CostModel>& model() const { return model_; }
  // Records and checks through a const tuner: its counters are atomic.
  CollNetUsage* usage() const { return usage_.get(); }

 private:
  const std::optional<CostModel> model_;
  const std::string why_inactive_;
  const std::unique_ptr<CollNetUsage> usage_;
};

}  // namespace rs::plugin
