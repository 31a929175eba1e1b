// HTTP GET for tests, with libcurl: scrapes reducerd's /metrics and queries
// Prometheus' HTTP API on 127.0.0.1. Every wait is bounded by `timeout`;
// proxies from the environment are never used.
//
// Thread-safe: every call uses its own handle.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace rs::testing {

// The body of a 200 response from http://127.0.0.1:PORT/PATH; any other
// status, a refused connection or the timeout is an error whose message says
// which.
StatusOr<std::string> HttpGet(uint16_t port, const std::string& path,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Percent-encodes a query parameter value.
std::string UrlEncode(const std::string& text);

}  // namespace rs::testing
