// The reducer's one-way switch from serving to draining. Whoever asks first
// (a signal, or a Drain call over gRPC) wins and names the reason; later
// requests learn that a drain is already under way. main() waits on it.
//
// Thread-safe: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

namespace rs::server {

class StopRequest {
 public:
  // True if this call requested the stop; false if one was requested before.
  bool Request(const std::string& reason);
  bool requested() const;
  // The first request's reason, or empty.
  std::string reason() const;
  // Blocks until a stop is requested; returns its reason.
  std::string Wait() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool requested_ = false;  // guarded by mu_
  std::string reason_;      // guarded by mu_
};

}  // namespace rs::server
