#include "server/control/stop_request.h"

namespace rs::server {

bool StopRequest::Request(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (requested_) return false;
    requested_ = true;
    reason_ = reason;
  }
  cv_.notify_all();
  return true;
}

bool StopRequest::requested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requested_;
}

std::string StopRequest::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

std::string StopRequest::Wait() const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return requested_; });
  return reason_;
}

}  // namespace rs::server
