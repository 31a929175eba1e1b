#include "server/net/reducer_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

#include "common/io_context.h"
#include "common/units.h"
#include "server/net/connection.h"
#include "server/net/source_address.h"

namespace rs::server {
ReducerServer::ReducerServer(ServerConfig config)
    : config_(std::move(config)), admission_(Admission::Create(config_.limits)) {
  // Whole granules only, so a piece that fits the limit also fits once rounded.
  config_.memory_limit = config_.memory_limit / MemoryBudget::kGranule * MemoryBudget::kGranule;
  budget_ = MemoryBudget::Create(config_.memory_limit);
  handshake_config_.job_token = config_.job_token;
  // A session needing more streams than the reducer accepts connections
  // could never become ready.
  handshake_config_.max_session_streams = config_.limits.max_connections;
}

StatusOr<std::unique_ptr<ReducerServer>> ReducerServer::Create(ServerConfig config) {
  if (config.io_threads < 1) return Status(Code::kInvalidArgument, "--io-threads must be at least 1");
  if (config.memory_limit < 2 * MemoryBudget::kGranule) {
    return Status(Code::kInvalidArgument, "--memory-limit must be at least 128KiB");
  }
  const AdmissionLimits& l = config.limits;
  if (l.max_connections < 1 || l.max_connections_per_source < 1 || l.max_handshakes_per_source < 1 ||
      l.max_pending_sessions < 1 || l.max_pending_sessions_per_source < 1) {
    return Status(Code::kInvalidArgument, "connection and session limits must be at least 1");
  }
  if (config.handshake_timeout.count() <= 0) {
    return Status(Code::kInvalidArgument, "--handshake-timeout must be positive");
  }
  std::shared_ptr<const DataTls> tls;
  if (config.tls) {
    auto made = DataTls::Create(DataTls::Role::kReducer, config.job_token);
    if (!made.ok()) return made.status().Prefixed("--tls");
    tls = std::move(made).value();
  }
  std::unique_ptr<ReducerServer> server(new ReducerServer(std::move(config)));
  server->data_tls_ = std::move(tls);
  for (int i = 0; i < server->config_.io_threads; ++i) {
    server->contexts_.push_back(MakeIoContext());
    server->guards_.push_back(asio::make_work_guard(*server->contexts_.back()));
  }
  RS_RETURN_IF_ERROR(server->Listen());
  server->sweep_ = std::make_unique<asio::steady_timer>(*server->contexts_[0]);
  server->accept_pause_ = std::make_unique<asio::steady_timer>(*server->contexts_[0]);
  server->Accept();
  server->ArmSweep();
  for (auto& ctx : server->contexts_) {
    server->threads_.emplace_back([c = ctx.get()] { c->run(); });
  }
  return server;
}

Status ReducerServer::Listen() {
  asio::error_code ec;
  const auto address = asio::ip::make_address(config_.listen_host, ec);
  if (ec) {
    return Status(Code::kInvalidArgument, "--listen: '" + config_.listen_host + "' is not an IP address");
  }
  const asio::ip::tcp::endpoint endpoint(address, config_.listen_port);
  acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(*contexts_[0]);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  // Accepted connections inherit the listener's congestion control, so they
  // never start on the host's bbr (whose pacing stays on a socket switched
  // away from it later); Connection applies the whole tuning again.
  if (!ec) (void)ApplyTcpTuning(acceptor_->native_handle(), config_.tcp);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Code::kIo, "cannot listen on " + config_.listen_host + ":" +
                                 std::to_string(config_.listen_port) + ": " + ec.message());
  }
  port_ = acceptor_->local_endpoint().port();
  return Status::Ok();
}

asio::io_context& ReducerServer::NextContext() {
  return *contexts_[next_context_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void ReducerServer::Accept() {
  acceptor_->async_accept(NextContext(), [this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || stopping_) return;
    if (!ec) {
      Admit(std::move(socket));
    } else {
      admission_->CountAcceptError();
      LogRefusal("accept error", "cannot accept a connection: " + ec.message());
      // Out of descriptors or kernel memory: retrying at once would spin.
      // The waiting connections stay in the listen backlog meanwhile.
      if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec == asio::error::no_buffer_space ||
          ec == asio::error::no_memory) {
        accept_pause_->expires_after(std::chrono::milliseconds(100));
        accept_pause_->async_wait([this](const asio::error_code& ec2) {
          if (!ec2 && !stopping_) Accept();
        });
        return;
      }
    }
    Accept();
  });
}

void ReducerServer::Admit(asio::ip::tcp::socket socket) {
  asio::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return;  // already reset by the peer; the socket closes here
  const std::string source = SourceOf(remote.address());
  Limit limit{};
  auto ticket = admission_->Admit(source, &limit);
  if (!ticket.ok()) {
    // Best effort: the refusal fits the fresh socket's send buffer, so a
    // worker sees why; a flood does not get more than this one write.
    const auto frame = protocol::EncodeError({ticket.status().code(), ticket.status().message()});
    socket.non_blocking(true, ec);
    socket.write_some(asio::buffer(frame), ec);
    socket.close(ec);
    LogRefusal(std::string("over ") + LimitName(limit), remote.address().to_string() + ":" +
                                                         std::to_string(remote.port()) + ": refused: " +
                                     ticket.status().message());
    return;
  }
  connections_accepted_.fetch_add(1, std::memory_order_relaxed);
  connections_active_.fetch_add(1, std::memory_order_relaxed);  // Connection's destructor takes it back
  auto executor = socket.get_executor();
  auto conn = std::make_shared<Connection>(*this, std::move(socket), std::move(ticket).value());
  // Start on the connection's own thread.
  asio::post(executor, [conn] { conn->Start(); });
}

void ReducerServer::LogRefusal(std::string_view kind, std::string line) {
  const bool auth = kind == CodeName(Code::kAuth);
  if (auto out = refusal_log_.Record(kind, std::move(line), Clock::now())) {
    if (auth) {
      spdlog::warn("{}", *out);
    } else {
      spdlog::info("{}", *out);
    }
  }
}

void ReducerServer::ArmSweep() {
  const auto period = std::clamp(std::min(config_.op_timeout, config_.join_timeout) / 10,
                                 std::chrono::milliseconds(10), std::chrono::milliseconds(500));
  sweep_->expires_after(period);
  sweep_->async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    std::vector<std::shared_ptr<Session>> sessions;
    {
      MutexLock lock(mu_);
      for (auto& [id, s] : sessions_) sessions.push_back(s);
    }
    const auto now = Clock::now();
    for (auto& s : sessions) s->CheckTimeouts(now);
    if (auto line = refusal_log_.Flush(now)) spdlog::info("{}", *line);
    ArmSweep();
  });
}

uint64_t ReducerServer::MaxPieceBytes(uint32_t world, DataType wire) const {
  // The budget hands out whole granules: the slots must fit once rounded up.
  const uint64_t granules = config_.memory_limit / MemoryBudget::kGranule * MemoryBudget::kGranule;
  const uint64_t fit = granules / std::max<uint32_t>(PieceSlots(world, wire), 1) / 64 * 64;
  const uint64_t limit = std::min<uint64_t>(config_.max_piece_bytes, fit);
  return limit < kMinPieceBytes ? 0 : limit;
}

StatusOr<std::shared_ptr<Session>> ReducerServer::JoinSession(const protocol::Hello& hello,
                                                              std::shared_ptr<SessionMember> member,
                                                              const std::string& source) {
  if (MaxPieceBytes(hello.world, hello.wire) == 0) {
    const std::string wire = hello.wire == DataType::kFloat32
                                 ? ""
                                 : " with wire type " + std::string(protocol::WireTypeName(hello.wire));
    return Status(Code::kResourceExhausted,
                  "this reducer's --memory-limit of " + std::to_string(config_.memory_limit) +
                      " bytes is too small for a world of " + std::to_string(hello.world) + " ranks" + wire);
  }
  std::shared_ptr<Session> session;
  bool created = false;
  bool became_ready = false;
  {
    MutexLock lock(mu_);
    if (stopping_) return Status(Code::kCancelled, "this reducer is shutting down");
    auto it = sessions_.find(hello.session);
    if (it == sessions_.end()) {
      // The stream's handshake refusal is logged and counted by its connection.
      RS_RETURN_IF_ERROR(admission_->OpenPendingSession(source));
      pending_.emplace(hello.session, source);
      SessionLimits limits{MaxPieceBytes(hello.world, hello.wire), config_.op_timeout, config_.join_timeout,
                           config_.crc, config_.result_part_bytes, config_.whole_pieces_from};
      session = std::make_shared<Session>(hello.session, hello.world, hello.streams, budget_, limits,
                                          Clock::now(), reducer_stats_, hello.flags, hello.wire);
      sessions_.emplace(hello.session, session);
      ++sessions_started_;
      created = true;
    } else {
      session = it->second;
    }
    const bool was_ready = session->ready();
    // Joining under the registry lock keeps a session from being dropped
    // between lookup and join.
    Status st = session->Join(hello, std::move(member));
    if (session->ready()) EndPendingLocked(hello.session);
    if (!st.ok()) return st;
    became_ready = !was_ready && session->ready();
  }
  const std::string id = protocol::SessionIdToString(hello.session);
  if (created) {
    spdlog::info("session {} opened by rank {} (world {}, {} stream{} per rank)", id, hello.rank, hello.world,
                 hello.streams, hello.streams == 1 ? "" : "s");
  }
  if (became_ready) LogResultParts(id, *session);
  return session;
}

// Said once every rank has joined, from what the session really uses: where
// it differs from small jobs' 32 KiB parts, and why.
void ReducerServer::LogResultParts(const std::string& id, const Session& session) const {
  if (config_.result_part_bytes == uint64_t{0}) return;  // whole pieces, as the operator asked
  if (const std::optional<uint32_t> rank = session.rank_without_parts()) {
    spdlog::info("session {}: results go back as whole pieces, not in parts: rank {}'s client does not take "
                 "parts (an older client); on many ranks or slow links whole pieces take longer",
                 id, *rank);
    return;
  }
  const uint64_t part = session.result_part_bytes();
  if (config_.result_part_bytes || part >= kMaxAutoResultPart) return;
  spdlog::info("session {}: results in parts of at least {}, automatic: {} / {} ranks (--result-part sets it)", id,
               FormatBytes(part), FormatBytes(kResultPartShare), session.world());
}

void ReducerServer::LeaveSession(const std::shared_ptr<Session>& session, uint32_t rank, uint16_t stream,
                                 Departure how, const Status& why) {
  MutexLock lock(mu_);
  if (!session->Leave(rank, stream, how, why)) return;
  auto it = sessions_.find(session->id());
  if (it == sessions_.end() || it->second != session) return;
  sessions_.erase(it);
  EndPendingLocked(session->id());
  const SessionStats st = session->stats();
  const Status failure = session->failure();
  SessionSnapshot last{session->id(), st, failure, /*ended=*/true,
                       std::chrono::duration<double>(Clock::now() - session->created()).count()};
  ended_.push_front(std::move(last));
  if (ended_.size() > kSessionHistory) ended_.pop_back();
  if (failure.ok()) {
    std::string straggler;
    if (const auto top = SlowestRanks(st, 1); !top.empty() && st.pieces_completed > 0) {
      straggler = fmt::format(", rank {} was last on {:.0f}% of pieces (waits {:.3g} s in all)", top[0].rank,
                              100.0 * static_cast<double>(top[0].count) / static_cast<double>(st.pieces_completed),
                              st.straggler_wait_seconds);
    }
    const std::string wire = session->wire() == DataType::kFloat32
                                 ? ""
                                 : fmt::format(", float32 sums as {} on the wire",
                                               protocol::WireTypeName(session->wire()));
    const std::string closed = session->ClosedWithoutGoodbye();
    const std::string unclosed = closed.empty() ? "" : fmt::format(" ({} closed without goodbye)", closed);
    spdlog::info("session {} ended: {} operations, {} pieces, {} bytes in, {} bytes out{}{}{}",
                 protocol::SessionIdToString(session->id()), st.operations_completed, st.pieces_completed,
                 st.bytes_received, st.bytes_sent, straggler, wire, unclosed);
  } else {
    ++sessions_failed_;
    spdlog::warn("session {} failed: {}", protocol::SessionIdToString(session->id()), failure.ToString());
  }
  sessions_changed_.notify_all();
}

void ReducerServer::EndPendingLocked(const protocol::SessionId& id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  admission_->ClosePendingSession(it->second);
  pending_.erase(it);
}

void ReducerServer::StopAccepting() {
  {
    // Under the registry lock so that no JoinSession is half way through.
    MutexLock lock(mu_);
    if (stopping_.exchange(true)) return;
  }
  asio::post(*contexts_[0], [this] {
    asio::error_code ignored;
    acceptor_->close(ignored);
  });
}

size_t ReducerServer::Drain(std::chrono::milliseconds timeout) {
  StopAccepting();
  std::vector<std::shared_ptr<Session>> left;
  {
    UniqueLock lock(mu_);
    sessions_changed_.wait_for(lock.native(), timeout, [this]() RS_REQUIRES(mu_) { return sessions_.empty(); });
    for (auto& [id, s] : sessions_) left.push_back(s);
  }
  for (auto& s : left) {
    s->Fail(Status(Code::kCancelled, "the reducer is shutting down (drain timeout expired)"));
  }
  {
    // Give the error frames a moment to reach the workers.
    UniqueLock lock(mu_);
    sessions_changed_.wait_for(lock.native(), std::chrono::seconds(2), [this]() RS_REQUIRES(mu_) { return sessions_.empty(); });
  }
  Stop();
  return left.size();
}

void ReducerServer::Stop() {
  stopping_ = true;
  for (auto& g : guards_) g.reset();
  for (auto& ctx : contexts_) ctx->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

ReducerServer::~ReducerServer() {
  Stop();
  // With the I/O threads stopped no stream will leave its session, so break
  // the session <-> connection cycles now, while the io_contexts that the
  // connections' sockets belong to still exist; the handlers still queued
  // hold the last references and go with their io_context, closing sockets.
  std::map<protocol::SessionId, std::shared_ptr<Session>> sessions;
  {
    MutexLock lock(mu_);
    sessions.swap(sessions_);
  }
  for (auto& [id, session] : sessions) session->DropMembers();
  sessions.clear();
  sweep_.reset();
  accept_pause_.reset();
  acceptor_.reset();
  contexts_.clear();
}

ServerStats ReducerServer::stats() const {
  ServerStats out;
  {
    MutexLock lock(mu_);
    out.sessions_started = sessions_started_;
    out.sessions_failed = sessions_failed_;
    out.sessions_active = sessions_.size();
  }
  out.admission = admission_->Snapshot();
  out.connections_accepted = connections_accepted_.load(std::memory_order_relaxed);
  out.connections_active = connections_active_.load(std::memory_order_relaxed);
  out.accepting = !stopping_;
  out.totals = reducer_stats_->Snapshot();
  out.memory_limit = config_.memory_limit;
  out.memory_in_use = budget_->in_use();
  out.memory_peak = budget_->peak_in_use();
  out.memory_waits = budget_->waits();
  return out;
}

std::vector<SessionSnapshot> ReducerServer::Sessions() const {
  std::vector<std::shared_ptr<Session>> live;
  std::vector<SessionSnapshot> ended;
  {
    MutexLock lock(mu_);
    for (const auto& [id, s] : sessions_) live.push_back(s);
    ended.assign(ended_.begin(), ended_.end());
  }
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a->created() > b->created(); });
  // Each session's own lock is taken outside the registry lock, one at a time.
  const auto now = Clock::now();
  std::vector<SessionSnapshot> snapshots;
  snapshots.reserve(live.size() + ended.size());
  for (const auto& s : live) {
    snapshots.push_back({s->id(), s->stats(), s->failure(), /*ended=*/false,
                         std::chrono::duration<double>(now - s->created()).count()});
  }
  snapshots.insert(snapshots.end(), std::make_move_iterator(ended.begin()), std::make_move_iterator(ended.end()));
  return snapshots;
}

}  // namespace rs::server
