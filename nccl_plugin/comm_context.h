// What the per-communicator init of the version 11 tables hands NCCL as its
// context (`void* ctx`), and what finalize takes back. NCCL 2.28+ calls init
// for every communicator it creates (and finalize when it is destroyed) on
// the same loaded library; the plugin's configuration and devices stay
// shared by all of them (plugin.h), so a context only records which
// communicator and table it belongs to, for checks and log lines. The Plugin
// owns every context (Plugin::OpenContext) and looks a pointer up before
// using it.
//
// Thread-safety: immutable.
#pragma once

#include <cstdint>

#include "nccl_plugin/opaque_object.h"

namespace rs::plugin {

class CommContext final : public OpaqueObject {
 public:
  enum class Kind { kNet, kCollNet };

  CommContext(Kind kind, uint64_t comm_id) : kind_(kind), comm_id_(comm_id) {}
  Kind kind() const { return kind_; }
  uint64_t comm_id() const { return comm_id_; }

 private:
  const Kind kind_;
  const uint64_t comm_id_;
};

}  // namespace rs::plugin
