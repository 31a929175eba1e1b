#include "nccl_plugin/tuner/collnet_tuner.h"

namespace rs::plugin {

CollNetTuner::Choice CollNetTuner::ForAllReduce(size_t bytes) const {
  if (!model_) return Choice::kUnchanged;
  return model_->PreferReducers(bytes) ? Choice::kReducers : Choice::kNccl;
}

std::string CollNetTuner::Describe() const {
  if (!model_) return "tuner inactive: " + why_inactive_;
  return "tuner: " + model_->Describe();
}

}  // namespace rs::plugin
