#include "tools/reducerctl/control_client.h"

#include <grpcpp/grpcpp.h>

namespace rs::reducerctl {

ControlClient::ControlClient(const std::string& target, std::chrono::milliseconds timeout)
    : target_(target), timeout_(timeout) {
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  control_ = v1::ReducerControl::NewStub(channel);
  health_ = health::Health::NewStub(channel);
}

template <typename Response, typename Request, typename Method>
StatusOr<Response> ControlClient::Call(const Request& request, Method method) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout_);
  Response response;
  const grpc::Status st = method(&context, request, &response);
  if (st.ok()) return response;
  switch (st.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status(Code::kIo, "cannot reach reducerd at " + target_ +
                                   " (is it running with --grpc-listen on that address?): " + st.error_message());
    case grpc::StatusCode::UNIMPLEMENTED:
      return Status(Code::kProtocol, target_ + " does not serve this call (is it a reducerd control port?): " +
                                         st.error_message());
    default:
      return Status(Code::kInvalidArgument, st.error_message());
  }
}

StatusOr<v1::ServerStatus> ControlClient::GetStatus() {
  return Call<v1::ServerStatus>(v1::GetStatusRequest(), [this](auto* c, const auto& req, auto* resp) {
    return control_->GetStatus(c, req, resp);
  });
}

StatusOr<v1::ListSessionsResponse> ControlClient::ListSessions() {
  return Call<v1::ListSessionsResponse>(v1::ListSessionsRequest(), [this](auto* c, const auto& req, auto* resp) {
    return control_->ListSessions(c, req, resp);
  });
}

StatusOr<v1::SessionInfo> ControlClient::GetSession(const std::string& id) {
  v1::GetSessionRequest request;
  request.set_id(id);
  return Call<v1::SessionInfo>(request, [this](auto* c, const auto& req, auto* resp) {
    return control_->GetSession(c, req, resp);
  });
}

StatusOr<v1::DrainResponse> ControlClient::Drain() {
  return Call<v1::DrainResponse>(v1::DrainRequest(), [this](auto* c, const auto& req, auto* resp) {
    return control_->Drain(c, req, resp);
  });
}

StatusOr<health::HealthCheckResponse> ControlClient::CheckHealth() {
  return Call<health::HealthCheckResponse>(health::HealthCheckRequest(), [this](auto* c, const auto& req, auto* resp) {
    return health_->Check(c, req, resp);
  });
}

}  // namespace rs::reducerctl
