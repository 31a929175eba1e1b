#include "server/control/control_service.h"

#include <cctype>

namespace rs::server {

// The slowest ranks a session reports; metrics have their own bound.
constexpr size_t kSlowestRanks = 8;

v1::ServerStatus ToProto(const ServerStats& stats) {
  v1::ServerStatus out;
  out.set_state(stats.accepting ? v1::ServerStatus::SERVING : v1::ServerStatus::DRAINING);
  out.set_sessions_active(stats.sessions_active);
  out.set_sessions_started(stats.sessions_started);
  out.set_sessions_failed(stats.sessions_failed);
  out.set_connections_active(stats.connections_active);
  out.set_connections_accepted(stats.connections_accepted);
  out.set_bytes_received(stats.totals.bytes_received);
  out.set_bytes_sent(stats.totals.bytes_sent);
  out.set_operations_completed(stats.totals.operations_completed);
  out.set_pieces_completed(stats.totals.pieces_completed);
  out.set_pieces_in_parts(stats.totals.pieces_in_parts);
  out.set_tcp_send_busy_seconds(static_cast<double>(stats.totals.tcp_send_busy_us) / 1e6);
  out.set_tcp_receive_window_wait_seconds(static_cast<double>(stats.totals.tcp_rwnd_limited_us) / 1e6);
  out.set_tcp_send_buffer_wait_seconds(static_cast<double>(stats.totals.tcp_sndbuf_limited_us) / 1e6);
  out.set_memory_limit_bytes(stats.memory_limit);
  out.set_memory_in_use_bytes(stats.memory_in_use);
  out.set_memory_peak_bytes(stats.memory_peak);
  out.set_memory_waits(stats.memory_waits);
  return out;
}

v1::SessionInfo ToProto(const SessionSnapshot& session) {
  const SessionStats& st = session.stats;
  v1::SessionInfo out;
  out.set_id(protocol::SessionIdToString(session.id));
  if (!session.failure.ok()) {
    out.set_state(v1::SessionInfo::FAILED);
    out.set_failure(session.failure.ToString());
  } else if (session.ended) {
    out.set_state(v1::SessionInfo::ENDED);
  } else {
    out.set_state(st.ready ? v1::SessionInfo::RUNNING : v1::SessionInfo::JOINING);
  }
  out.set_world_size(st.world);
  out.set_ranks_joined(st.ranks_joined);
  out.set_streams_per_rank(st.streams);
  out.set_operations_completed(st.operations_completed);
  out.set_pieces_completed(st.pieces_completed);
  out.set_bytes_received(st.bytes_received);
  out.set_bytes_sent(st.bytes_sent);
  out.set_age_seconds(session.age_seconds);
  out.set_straggler_wait_seconds(st.straggler_wait_seconds);
  out.set_result_part_bytes(st.result_part_bytes);
  if (st.rank_without_parts) out.set_rank_without_parts(*st.rank_without_parts);
  for (const RankCount& rc : SlowestRanks(st, kSlowestRanks)) {
    auto* r = out.add_slowest_ranks();
    r->set_rank(rc.rank);
    r->set_last_arrivals(rc.count);
  }
  return out;
}

std::string NormalizeSessionId(const std::string& text) {
  if (text.size() != 2 * protocol::kSessionIdBytes) return {};
  std::string out;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return {};
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

namespace {

// A caller's text as an error message quotes it: at most 48 bytes, each
// byte that is not printable ASCII as '?', and a longer one cut with its
// length named (a request may be megabytes).
std::string QuotedForError(const std::string& text) {
  constexpr size_t kShown = 48;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  if (text.size() > kShown) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace

ControlService::ControlService(const ReducerServer& server, StopRequest& stop,
                               std::function<void()> begin_drain, Info info)
    : server_(server), stop_(stop), begin_drain_(std::move(begin_drain)), info_(std::move(info)) {}

grpc::Status ControlService::GetStatus(grpc::ServerContext*, const v1::GetStatusRequest*,
                                       v1::ServerStatus* response) {
  *response = ToProto(server_.stats());
  const auto& cfg = server_.config();
  response->set_version(info_.version);
  response->set_uptime_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - info_.started).count());
  response->set_data_address(cfg.listen_host + ":" + std::to_string(server_.port()));
  response->set_io_threads(static_cast<uint32_t>(cfg.io_threads));
  return grpc::Status::OK;
}

grpc::Status ControlService::ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                                          v1::ListSessionsResponse* response) {
  for (const auto& s : server_.Sessions()) *response->add_sessions() = ToProto(s);
  return grpc::Status::OK;
}

grpc::Status ControlService::GetSession(grpc::ServerContext*, const v1::GetSessionRequest* request,
                                        v1::SessionInfo* response) {
  const std::string id = NormalizeSessionId(request->id());
  if (id.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "session id '" + QuotedForError(request->id()) +
                            "' is not 32 hex digits (as printed in the reducer's log)");
  }
  const auto sessions = server_.Sessions();
  for (const auto& s : sessions) {
    if (protocol::SessionIdToString(s.id) == id) {
      *response = ToProto(s);
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      "no session " + id + " on this reducer (it knows " + std::to_string(sessions.size()) +
                          " sessions: the live ones and the last " +
                          std::to_string(ReducerServer::kSessionHistory) + " ended)");
}

grpc::Status ControlService::Drain(grpc::ServerContext* context, const v1::DrainRequest*,
                                   v1::DrainResponse* response) {
  const auto already = [this] {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "the reducer is already draining (" + stop_.reason() + ")");
  };
  if (stop_.requested()) return already();
  // Before the request: once it is made, main() may start shutting down,
  // and health must read NOT_SERVING by the time this call returns.
  begin_drain_();
  if (!stop_.Request("drain requested over gRPC by " + context->peer())) return already();
  response->set_sessions_running(static_cast<uint32_t>(server_.stats().sessions_active));
  response->set_drain_timeout_seconds(std::chrono::duration<double>(info_.drain_timeout).count());
  return grpc::Status::OK;
}

}  // namespace rs::server
