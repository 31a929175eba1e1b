// The ABI layer's shared machinery: the library's one Plugin (created at the
// first init of any table, destroyed when the library is unloaded), NCCL's
// logger, and the one wrapper (Guard) through which every slot passes: it
// catches every exception, logs a failure once through NCCL's logger and maps
// the Status to a result code. Also the small argument checks every slot uses.
//
// Thread-safety: InitLibrary is serialised by a mutex and idempotent; the
// other functions may be called from any thread once it has returned.
#pragma once

#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "common/status.h"
#include "nccl_plugin/abi/nccl_abi.h"
#include "nccl_plugin/log.h"
#include "nccl_plugin/plugin.h"

namespace rs::plugin::abi {

inline constexpr const char* kPluginName = "Reducer";

// Installs NCCL's logger (when not NULL) and creates the Plugin on first use.
// Never fails: configuration problems surface from the calls they affect.
void InitLibrary(Logger logger);
// The Plugin, or an error when no init has run yet.
StatusOr<Plugin*> Instance();

// What a slot's body hands back: a Status, flagged when it stems from the
// plugin's configuration rather than from the call.
struct Outcome {
  Outcome(Status s) : status(std::move(s)) {}  // NOLINT: implicit by design
  static Outcome Misconfigured(Status s) {
    Outcome out(std::move(s));
    out.misconfiguration = true;
    return out;
  }
  Status status;
  bool misconfiguration = false;
};

// Runs a slot's body: no exception crosses into NCCL, a failure is logged
// once (WARN) and becomes NCCL's result code.
template <typename Fn>
Result Guard(const char* what, Fn&& fn) noexcept {
  try {
    Outcome out = fn();
    if (out.status.ok()) return Result::kSuccess;
    RS_PLOG_WARN("%s failed: %s", what, out.status.ToString().c_str());
    return ResultFor(out.status.code(), out.misconfiguration);
  } catch (const std::bad_alloc&) {
    RS_PLOG_WARN("%s failed: out of memory", what);
    return Result::kSystemError;
  } catch (const std::exception& e) {
    RS_PLOG_WARN("%s failed: unexpected exception: %s", what, e.what());
    return Result::kInternalError;
  } catch (...) {
    RS_PLOG_WARN("%s failed: unexpected exception", what);
    return Result::kInternalError;
  }
}

#define RS_ABI_ASSIGN_OR_RETURN(lhs, expr)      \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = std::move(lhs##_or).value()

inline Status NonNull(const void* p, const char* what) {
  if (p == nullptr) return Status(Code::kInvalidArgument, std::string(what) + " is NULL");
  return Status::Ok();
}

// A size or count from NCCL (int in v7/v8, size_t in v11) as size_t.
template <typename Size>
Status SizeFromAbi(Size size, size_t* out) {
  if constexpr (std::is_signed_v<Size>) {
    if (size < 0) return Status(Code::kInvalidArgument, "negative size " + std::to_string(size));
  }
  *out = static_cast<size_t>(size);
  return Status::Ok();
}

inline Status RequireHost(int type) {
  if (type != kPtrHost) {
    return Status(Code::kInvalidArgument, "memory type " + std::to_string(type) +
                                              " cannot be registered: this plugin reports ptrSupport HOST only");
  }
  return Status::Ok();
}

// The properties of every table version from the core's description.
template <typename Props>
void FillProperties(const DeviceProperties& p, Props* out) {
  *out = Props{};
  out->name = const_cast<char*>(p.name);
  out->pciPath = const_cast<char*>(p.pci_path);
  out->guid = p.guid;
  out->ptrSupport = kPtrHost;
  out->speed = p.speed_mbps;
  out->port = 0;
  out->latency = 0;
  out->maxComms = p.max_comms;
  out->maxRecvs = p.max_recvs;
  if constexpr (requires { out->netDeviceType; }) {  // v7 and later; v5/v6 have no device type
    out->netDeviceType = kNetDeviceHost;
    out->netDeviceVersion = 0;
  }
  if constexpr (requires { out->maxP2pBytes; }) {
    out->forceFlush = 0;
    out->vProps.ndevs = 1;           // a physical device: itself
    out->vProps.devs[0] = p.index;
    out->maxP2pBytes = kMaxP2pBytes;
    out->maxCollBytes = kMaxCollBytes;
    out->maxMultiRequestSize = 1;
  }
}

}  // namespace rs::plugin::abi
