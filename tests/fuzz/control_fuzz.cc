// Fuzz target: the control plane (server/control/*): the settings it reads
// (drain timeout, the gRPC and metrics addresses, the metrics' bounds,
// through reducerd's own ParseOptions), then the ReducerControl handlers,
// called directly with requests parsed from the fuzzer's bytes, against an
// in-process ReducerServer whose sessions the fuzzer opens, feeds, fails and
// ends (through the calls connections make), and the Prometheus families.
//
// Properties: no crash or sanitizer report; settings are parsed or refused
// with an error, never half-applied; every response is well formed (it
// serializes and parses back to itself, so every string in it is valid
// UTF-8), and says what the reducer holds: states, counts, ids of 32 hex
// digits, ranks within the world, a failure text exactly for failed
// sessions; GetSession finds exactly the ids ListSessions lists and refuses
// malformed ones with INVALID_ARGUMENT; the first Drain succeeds, flips the
// state and stops new sessions, every later one is FAILED_PRECONDITION; the
// metrics stay within their configured bounds.
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/units.h"
#include "protocol/auth.h"
#include "protocol/error_text.h"
#include "server/control/control_service.h"
#include "server/control/metrics_collector.h"
#include "server/options.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rs;
using namespace rs::server;

// The sessions the fuzzer's ranks may join: a few names, so they collide.
constexpr const char* kSessionNames[] = {"control-a", "control-b", "control-c", "control-d"};
constexpr uint32_t kSessions = 4;

// A rank's stream as the session sees it; it records, never calls back.
class Member : public SessionMember {
 public:
  void SendReady() override {}
  void SendResult(const ResultPart&) override {}
  void SendErrorAndClose(const Status& status) override { FUZZ_CHECK(!status.ok()); }
  void SendControl(std::vector<uint8_t>) override {}
  void CloseQuietly() override {}
};

bool IsLowerHex(const std::string& s) {
  if (s.size() != 2 * protocol::kSessionIdBytes) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

// Serializes and parses back to an equal message: a proto3 string field
// that is not UTF-8 fails the parse, as it would in reducerctl.
template <typename Message>
void CheckWellFormed(const Message& m) {
  std::string bytes;
  FUZZ_CHECK(m.SerializeToString(&bytes));
  Message back;
  FUZZ_CHECK(back.ParseFromString(bytes));
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(m, back));
}

void CheckSession(const v1::SessionInfo& s) {
  CheckWellFormed(s);
  FUZZ_CHECK(IsLowerHex(s.id()));
  FUZZ_CHECK(s.state() >= v1::SessionInfo::JOINING && s.state() <= v1::SessionInfo::ENDED);
  FUZZ_CHECK((s.state() == v1::SessionInfo::FAILED) == !s.failure().empty());
  FUZZ_CHECK(s.world_size() >= 1 && s.ranks_joined() <= s.world_size() && s.streams_per_rank() >= 1);
  FUZZ_CHECK(s.age_seconds() >= 0 && std::isfinite(s.straggler_wait_seconds()));
  FUZZ_CHECK(s.slowest_ranks_size() <= 8);
  uint64_t previous = UINT64_MAX;
  for (const auto& r : s.slowest_ranks()) {
    FUZZ_CHECK(r.rank() < s.world_size() && r.last_arrivals() > 0 && r.last_arrivals() <= previous);
    previous = r.last_arrivals();
  }
}

bool ValidMetricName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ':') return false;
  }
  return true;
}

void CheckMetrics(const ReducerServer& server, const MetricsLimits& limits) {
  const auto families = BuildMetricFamilies(server.stats(), server.Sessions(), limits);
  std::map<std::string, size_t> per_family;
  for (const auto& f : families) {
    FUZZ_CHECK(ValidMetricName(f.name) && !f.help.empty());
    FUZZ_CHECK(per_family.emplace(f.name, f.metric.size()).second);  // each family once
    for (const auto& m : f.metric) {
      for (const auto& label : m.label) FUZZ_CHECK(ValidMetricName(label.name) && !label.value.empty());
    }
  }
  FUZZ_CHECK(per_family["reducer_session_world_size"] <= limits.max_sessions);
  FUZZ_CHECK(per_family["reducer_straggler_last_arrivals_total"] <= limits.max_sessions * limits.max_ranks);
}

// reducerd's settings with the control plane's variables from the input:
// one length byte and that much text each.
StatusOr<Options> ParseControlOptions(fuzz::Cursor& in) {
  static constexpr const char* kVariables[] = {"REDUCER_DRAIN_TIMEOUT", "REDUCER_GRPC_LISTEN",
                                               "REDUCER_METRICS_LISTEN", "REDUCER_METRICS_MAX_SESSIONS",
                                               "REDUCER_METRICS_MAX_RANKS", "REDUCER_METRICS_SESSION_IDS"};
  std::map<std::string, std::string> env;
  const uint8_t given = in.Byte();  // which variables are set
  for (size_t i = 0; i < std::size(kVariables); ++i) {
    if ((given >> i & 1) == 0) continue;
    const auto text = in.Take(in.Byte());
    env[kVariables[i]] = std::string(text.begin(), text.end());
  }
  // Not the process's environment: only what the input sets.
  const EnvLookup lookup = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  char arg0[] = "reducerd";
  char* argv[] = {arg0, nullptr};
  auto options = ParseOptions(1, argv, lookup);
  if (!options.ok()) {
    FUZZ_CHECK(!options.status().message().empty());
    return options;
  }
  const ControlConfig& c = options->control;
  FUZZ_CHECK(c.drain_timeout == options->drain_timeout && c.drain_timeout.count() >= 0);
  for (const std::string* listen : {&c.grpc_listen, &c.metrics_listen}) {
    if (listen->empty()) continue;  // off
    auto hp = ParseHostPort(*listen);
    FUZZ_CHECK(hp.ok());
  }
  FUZZ_CHECK(c.metrics_max_sessions <= 1024 && c.metrics_max_ranks <= 1024);
  return options;
}

std::string RequestBytes(fuzz::Cursor& in) {
  const auto bytes = in.Take(in.Byte());
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

// Input: the settings (ParseControlOptions), then commands: a byte whose low
// three bits pick a handler call (with a request's bytes) or a change to the
// reducer's sessions, then its arguments.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    google::protobuf::SetLogHandler(nullptr);  // a request that is not UTF-8 is only refused, not logged
    return true;
  }();
  (void)quiet;
  fuzz::Cursor in(data, size);
  auto options = ParseControlOptions(in);
  if (!options.ok()) return 0;

  ServerConfig net;
  net.listen_host = "127.0.0.1";
  net.io_threads = 1;
  net.memory_limit = 1 << 20;
  auto server = ReducerServer::Create(net);
  FUZZ_CHECK(server.ok());
  ReducerServer& reducer = **server;
  StopRequest stop;
  int drain_begun = 0;
  ControlService::Info info;
  info.version = "fuzz";
  info.drain_timeout = options->control.drain_timeout;
  ControlService service(reducer, stop, [&] {
    ++drain_begun;
    reducer.StopAccepting();
  }, info);
  const MetricsLimits limits{options->control.metrics_max_sessions, options->control.metrics_max_ranks,
                             options->control.metrics_session_ids};

  // What the fuzzer's ranks hold: per session, the streams that joined.
  std::vector<std::shared_ptr<Session>> sessions(kSessions);
  std::vector<std::vector<std::shared_ptr<SessionMember>>> members(kSessions);
  uint64_t seq = 0;

  for (int command = 0; command < 64 && !in.empty(); ++command) {
    const uint8_t op = in.Byte();
    grpc::ServerContext context;
    switch (op & 7) {
      case 0: {  // GetStatus
        v1::GetStatusRequest request;
        if (!request.ParseFromString(RequestBytes(in))) break;
        v1::ServerStatus status;
        FUZZ_CHECK(service.GetStatus(&context, &request, &status).ok());
        CheckWellFormed(status);
        FUZZ_CHECK(status.state() == (drain_begun == 0 ? v1::ServerStatus::SERVING : v1::ServerStatus::DRAINING));
        FUZZ_CHECK(status.data_address() == "127.0.0.1:" + std::to_string(reducer.port()));
        FUZZ_CHECK(status.memory_in_use_bytes() <= status.memory_limit_bytes());
        FUZZ_CHECK(status.memory_peak_bytes() <= status.memory_limit_bytes());
        FUZZ_CHECK(status.sessions_failed() <= status.sessions_started());
        FUZZ_CHECK(status.sessions_active() <= status.sessions_started());
        break;
      }
      case 1: {  // ListSessions
        v1::ListSessionsRequest request;
        if (!request.ParseFromString(RequestBytes(in))) break;
        v1::ListSessionsResponse list;
        FUZZ_CHECK(service.ListSessions(&context, &request, &list).ok());
        CheckWellFormed(list);
        FUZZ_CHECK(list.sessions_size() <= static_cast<int>(kSessions + ReducerServer::kSessionHistory));
        for (const auto& s : list.sessions()) CheckSession(s);
        break;
      }
      case 2: {  // GetSession: any id, or one the reducer knows, in any case
        v1::GetSessionRequest request;
        if ((op & 8) != 0) {
          std::string id = protocol::SessionIdToString(protocol::SessionIdFromName(kSessionNames[in.Byte() % 4]));
          if ((op & 16) != 0) {
            for (char& c : id) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          }
          request.set_id(id);
        } else if (!request.ParseFromString(RequestBytes(in))) {
          break;
        }
        v1::SessionInfo info_out;
        const grpc::Status st = service.GetSession(&context, &request, &info_out);
        const std::string id = NormalizeSessionId(request.id());
        bool listed = false;
        for (const auto& s : reducer.Sessions()) listed |= protocol::SessionIdToString(s.id) == id;
        if (id.empty()) {
          FUZZ_CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
        } else if (!listed) {
          FUZZ_CHECK(st.error_code() == grpc::StatusCode::NOT_FOUND);
        } else {
          FUZZ_CHECK(st.ok() && info_out.id() == id);
          CheckSession(info_out);
        }
        if (!st.ok()) FUZZ_CHECK(!st.error_message().empty());
        break;
      }
      case 3: {  // Drain
        v1::DrainRequest request;
        if (!request.ParseFromString(RequestBytes(in))) break;
        v1::DrainResponse response;
        const bool first = !stop.requested();
        const grpc::Status st = service.Drain(&context, &request, &response);
        if (first) {
          FUZZ_CHECK(st.ok() && stop.requested() && drain_begun == 1 && !reducer.accepting());
          CheckWellFormed(response);
          const double seconds = response.drain_timeout_seconds();
          FUZZ_CHECK(std::isfinite(seconds) && seconds >= 0);
          FUZZ_CHECK(std::fabs(seconds * 1000 - static_cast<double>(info.drain_timeout.count())) <=
                     1e-9 * static_cast<double>(info.drain_timeout.count()) + 1e-6);
        } else {
          FUZZ_CHECK(st.error_code() == grpc::StatusCode::FAILED_PRECONDITION && drain_begun == 1);
        }
        break;
      }
      case 4: {  // a rank joins a session, as a connection does after its handshake
        const uint32_t s = in.Byte() % kSessions;
        protocol::Hello hello;
        hello.session = protocol::SessionIdFromName(kSessionNames[s]);
        hello.world = 1 + in.Byte() % 4;
        hello.rank = in.Byte() % 4;
        hello.streams = 1;
        auto member = std::make_shared<Member>();
        auto joined = reducer.JoinSession(hello, member, "fuzz");
        if (drain_begun != 0) FUZZ_CHECK(!joined.ok());
        if (!joined.ok()) break;
        sessions[s] = *joined;
        members[s].push_back(member);
        break;
      }
      case 5: {  // a rank leaves (after BYE, closed, or lost)
        const uint32_t s = in.Byte() % kSessions;
        if (!sessions[s]) break;
        const uint32_t rank = in.Byte() % sessions[s]->world();
        constexpr Departure kHow[] = {Departure::kGoodbye, Departure::kClosed, Departure::kLost};
        reducer.LeaveSession(sessions[s], rank, 0, kHow[(op >> 3) % 3], Status(Code::kIo, "fuzzer closed it"));
        break;
      }
      case 6: {  // a rank aborts with an ERROR of its own text, which the connection escapes
        const uint32_t s = in.Byte() % kSessions;
        const auto text = in.Take(in.Byte());
        if (!sessions[s]) break;
        sessions[s]->Fail(Status(Code::kPeerFailed,
                                 "rank 0 aborted: " +
                                     protocol::PrintableErrorText(std::string_view(
                                         reinterpret_cast<const char*>(text.data()), text.size()))));
        break;
      }
      case 7: {  // every rank of a ready session contributes one piece, in an order of the fuzzer's
        const uint32_t s = in.Byte() % kSessions;
        const uint8_t order = in.Byte();
        if (!sessions[s] || !sessions[s]->ready()) break;
        Session& session = *sessions[s];
        if (session.stats().ranks_joined != session.world()) break;  // only joined ranks send
        protocol::PieceHeader h;
        h.seq = seq++;
        h.pieces = 1;
        h.count = 16;
        h.total_count = 16;
        const uint32_t world = session.world();
        for (uint32_t i = 0; i < world; ++i) {
          const uint32_t rank = (i + order) % world;
          Contribution c = session.BeginContribution(rank, std::make_shared<Member>(), 0, h, {}, Clock::now());
          if (c.kind != Contribution::Kind::kReceive) continue;
          std::fill(c.dest, c.dest + h.PayloadBytes(), uint8_t{0});
          session.EndContribution(rank, c.piece);
        }
        break;
      }
    }
    if ((op & 0xc0) == 0xc0) CheckMetrics(reducer, limits);
  }
  CheckMetrics(reducer, limits);
  return 0;
}
