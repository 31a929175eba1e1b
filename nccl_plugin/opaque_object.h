// The common base of every object the plugin hands NCCL as an opaque
// `void*`: point-to-point and CollNet comms, and the per-communicator
// contexts. NCCL gives these pointers back untyped; As<T>() checks that a
// comm is one of ours (magic) and of the expected kind (dynamic_cast) before
// use, so a comm passed to the wrong slot is reported as misuse instead of
// being reinterpreted. Contexts are looked up instead (opaque_registry.h).
// Pointers must go out through ToOpaque, so that they point at this base.
//
// Thread-safety: the magic is immutable; As/Cast/ToOpaque are reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace rs::plugin {

class OpaqueObject {
 public:
  virtual ~OpaqueObject() = default;
  OpaqueObject(const OpaqueObject&) = delete;
  OpaqueObject& operator=(const OpaqueObject&) = delete;

  static void* ToOpaque(OpaqueObject* object) { return object; }

  // nullptr when `opaque` is NULL, not ours, or not a T.
  template <typename T>
  static T* As(void* opaque) {
    if (opaque == nullptr) return nullptr;
    auto* object = static_cast<OpaqueObject*>(opaque);
    if (object->magic_ != kMagic) return nullptr;
    return dynamic_cast<T*>(object);
  }

  // As<T>, or kInternal saying the call got something that is not `what`
  // (e.g. "a recv comm") of this plugin.
  template <typename T>
  static StatusOr<T*> Cast(void* opaque, const char* what) {
    if (T* object = As<T>(opaque)) return object;
    return Status(Code::kInternal, std::string("called with something that is not ") + what + " of this plugin");
  }

 protected:
  OpaqueObject() = default;

 private:
  static constexpr uint32_t kMagic = 0x4F52444E;  // "NDRO"
  const uint32_t magic_ = kMagic;
};

}  // namespace rs::plugin
