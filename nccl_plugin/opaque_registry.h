// The objects the plugin hands NCCL as per-communicator contexts (v11
// contexts, tuner contexts), owned here rather than by NCCL's pointer: a
// pointer NCCL gives back is looked up before it is read, so a context used
// after its finalize, or one of another kind, is refused without touching
// freed memory, and whatever NCCL never finalizes goes with the plugin.
//
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "nccl_plugin/opaque_object.h"

namespace rs::plugin {

template <typename T>
class OpaqueRegistry {
 public:
  // Takes ownership; returns the object (its opaque pointer is what NCCL gets).
  T* Add(std::unique_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mu_);
    objects_.push_back(std::move(object));
    return objects_.back().get();
  }
  // The object behind `opaque`, or nullptr when it is not one of ours.
  T* Find(const void* opaque) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& o : objects_) {
      if (OpaqueObject::ToOpaque(o.get()) == opaque) return o.get();
    }
    return nullptr;
  }
  // Destroys the object behind `opaque`; false when it is not one of ours.
  bool Remove(const void* opaque) {
    std::unique_ptr<T> doomed;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(objects_.begin(), objects_.end(),
                           [&](const std::unique_ptr<T>& o) { return OpaqueObject::ToOpaque(o.get()) == opaque; });
    if (it == objects_.end()) return false;
    doomed = std::move(*it);
    objects_.erase(it);
    return true;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<T>> objects_;  // guarded by mu_
};

}  // namespace rs::plugin
