#include "client/client.h"

#include "client/client_impl.h"
#include "common/units.h"

namespace rs::client {

std::string Endpoint::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

StatusOr<std::vector<Endpoint>> ParseEndpoints(const std::string& list) {
  std::vector<Endpoint> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) {
      auto hp = ParseHostPort(item, "");
      if (!hp.ok() || hp->host.empty() || hp->port == 0) {
        return Status(Code::kInvalidArgument, "reducer address '" + item + "' is not HOST:PORT");
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
