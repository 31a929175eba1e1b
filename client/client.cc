#include "client/client.h"

#include <string>
#include <vector>

#include "client/client_impl.h"
#include "common/units.h"

namespace rs::client {

std::string Endpoint::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

// "name-{0..3}.svc:7450" -> name-0.svc:7450 ... name-3.svc:7450: the stable
// names Kubernetes gives indexed pods (a JobSet's, a StatefulSet's) under a
// headless Service, written once with the count the manifest sets. One range
// per item, decimal bounds, first <= last, at most kMaxRangeEndpoints names.
constexpr unsigned long kMaxRangeEndpoints = 1024;

Status ExpandRange(const std::string& item, std::vector<std::string>& out) {
  const size_t open = item.find('{');
  if (open == std::string::npos && item.find('}') == std::string::npos) {
    out.push_back(item);
    return Status::Ok();
  }
  const Status bad(Code::kInvalidArgument,
                   "reducer address '" + item + "': a range is written {FIRST..LAST}, e.g. reducer-{0..3}.svc:7450");
  const size_t close = item.find('}', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos || item.find('{', open + 1) != std::string::npos ||
      item.find('}', close + 1) != std::string::npos) {
    return bad;
  }
  const std::string range = item.substr(open + 1, close - open - 1);
  const size_t dots = range.find("..");
  const std::string first = range.substr(0, dots);
  const std::string last = dots == std::string::npos ? "" : range.substr(dots + 2);
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(first) || !digits(last)) return bad;
  const unsigned long lo = std::stoul(first), hi = std::stoul(last);
  if (lo > hi || hi - lo >= kMaxRangeEndpoints) {
    return Status(Code::kInvalidArgument, "reducer address '" + item + "': the range must run upwards over at most " +
                                              std::to_string(kMaxRangeEndpoints) + " names");
  }
  for (unsigned long i = lo; i <= hi; ++i) {
    out.push_back(item.substr(0, open) + std::to_string(i) + item.substr(close + 1));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<Endpoint>> ParseEndpoints(const std::string& list) {
  std::vector<Endpoint> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    std::vector<std::string> names;
    if (!item.empty()) {
      if (Status st = ExpandRange(item, names); !st.ok()) return st;
    }
    for (const std::string& name : names) {
      auto hp = ParseHostPort(name, "");
      if (!hp.ok() || hp->host.empty() || hp->port == 0) {
        return Status(Code::kInvalidArgument, "reducer address '" + name + "' is not HOST:PORT");
      }
      out.push_back(Endpoint{hp->host, hp->port});
    }
    start = comma + 1;
  }
  if (out.empty()) return Status(Code::kInvalidArgument, "no reducer addresses in '" + list + "'");
  return out;
}

StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  auto client = std::make_unique<ClientImpl>(std::move(options));
  Status st = client->Connect();
  if (!st.ok()) return st;
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace rs::client
