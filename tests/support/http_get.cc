#include "tests/support/http_get.h"

#include <curl/curl.h>

#include <memory>

namespace rs::testing {
namespace {

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;

// curl_global_init is not safe to race with other threads' first use:
// done once, before the first handle.
CurlHandle NewHandle() {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  return CurlHandle(init == CURLE_OK ? curl_easy_init() : nullptr);
}

size_t Append(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

}  // namespace

StatusOr<std::string> HttpGet(uint16_t port, const std::string& path, std::chrono::milliseconds timeout) {
  CurlHandle curl = NewHandle();
  if (!curl) return Status(Code::kInternal, "libcurl could not be initialised");
  const std::string where = "127.0.0.1:" + std::to_string(port);
  const std::string url = "http://" + where + path;
  std::string body;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  const CURLcode rc = curl_easy_perform(curl.get());
  if (rc == CURLE_COULDNT_CONNECT) return Status(Code::kIo, "cannot connect to " + where);
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return Status(Code::kTimeout, "no complete answer from " + where + " within " + std::to_string(timeout.count()) +
                                      " ms");
  }
  if (rc != CURLE_OK) {
    return Status(Code::kIo, "GET " + url + ": " + (error[0] ? error : curl_easy_strerror(rc)));
  }
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    return Status(Code::kProtocol, "GET " + url + ": HTTP " + std::to_string(status) + ": " + body.substr(0, 500));
  }
  return body;
}

std::string UrlEncode(const std::string& text) {
  CurlHandle curl = NewHandle();
  char* escaped = curl ? curl_easy_escape(curl.get(), text.data(), static_cast<int>(text.size())) : nullptr;
  if (escaped == nullptr) return std::string();
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

}  // namespace rs::testing
