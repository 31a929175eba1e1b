#include "client/client.h"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "client/operation.h"
#include "client/reducer_stream.h"
#include "common/units.h"
#include "protocol/crc32c.h"

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

namespace {

std::string List(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

class ClientImpl final : public Client, public StreamOwner {
 public:
  explicit ClientImpl(ClientOptions options) : opts_(std::move(options)) {}
  ~ClientImpl() override;

  Status Connect();

  std::shared_ptr<Operation> AllReduce(const void* send, void* recv, size_t count, DataType dtype,
                                       ReduceOp op) override;
  Status health() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return health_;
  }
  uint32_t rank() const override { return opts_.rank; }
  uint32_t world() const override { return opts_.world; }
  size_t num_reducers() const override { return opts_.reducers.size(); }

  // StreamOwner, called on I/O threads.
  void OnStreamReady(uint32_t reducer, uint64_t max_piece_bytes) override;
  void OnStreamFailed(uint32_t reducer, const Status& status) override { Fail(status); }
  void OnStreamClosed() override;
  std::shared_ptr<OperationImpl> FindOperation(uint64_t seq) override;
  void OperationComplete(uint64_t seq) override;
  void Log(LogLevel level, const std::string& message) override;

 private:
  void Fail(const Status& status);
  void RunIoLoop(asio::io_context& io);
  void ArmSweep();
  std::shared_ptr<OperationImpl> FailedOp(uint64_t seq, const void* send, void* recv, size_t count,
                                          DataType dtype, ReduceOp op, const Status& status);

  const ClientOptions opts_;
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::vector<std::vector<std::shared_ptr<ReducerStream>>> streams_;  // [reducer][stream]
  std::unique_ptr<asio::steady_timer> sweep_;
  size_t total_streams_ = 0;
  uint64_t next_seq_ = 0;  // AllReduce's thread only
  size_t piece_bytes_ = 0;  // fixed once ready

  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t ready_streams_ = 0;                                      // guarded by mu_
  size_t closed_streams_ = 0;                                     // guarded by mu_
  uint64_t max_piece_bytes_ = UINT64_MAX;                         // guarded by mu_
  Status health_;                                                 // guarded by mu_
  std::unordered_map<uint64_t, std::shared_ptr<OperationImpl>> ops_;  // guarded by mu_
};

Status ClientImpl::Connect() {
  if (opts_.reducers.empty()) return Status(Code::kInvalidArgument, "no reducers given");
  if (opts_.world == 0 || opts_.rank >= opts_.world) {
    return Status(Code::kInvalidArgument, "rank " + std::to_string(opts_.rank) + " is not below world size " +
                                              std::to_string(opts_.world));
  }
  if (opts_.world > protocol::kMaxWorld) {
    return Status(Code::kInvalidArgument, "world size " + std::to_string(opts_.world) + " exceeds the protocol's " +
                                              std::to_string(protocol::kMaxWorld));
  }
  if (opts_.streams_per_reducer < 1 || opts_.streams_per_reducer > protocol::kMaxStreams) {
    return Status(Code::kInvalidArgument,
                  "streams per reducer must be 1 to " + std::to_string(protocol::kMaxStreams));
  }
  if (opts_.max_piece_bytes < 4096) return Status(Code::kInvalidArgument, "piece size must be at least 4 KiB");
  if (opts_.liveness_timeout.count() < 0 || opts_.liveness_timeout > std::chrono::hours(24)) {
    return Status(Code::kInvalidArgument, "liveness timeout must be 0 (off) to 24 h");
  }
  if (opts_.liveness_timeout.count() > 0 && opts_.liveness_timeout < std::chrono::milliseconds(100)) {
    return Status(Code::kInvalidArgument, "liveness timeout must be at least 100 ms (or 0 for off)");
  }
  const int threads = std::max(1, opts_.io_threads);
  for (int i = 0; i < threads; ++i) {
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    guards_.push_back(asio::make_work_guard(*contexts_.back()));
  }
  const auto deadline = Clock::now() + opts_.connect_timeout;
  size_t next = 0;
  for (uint32_t r = 0; r < opts_.reducers.size(); ++r) {
    streams_.emplace_back();
    for (int s = 0; s < opts_.streams_per_reducer; ++s) {
      StreamParams params;
      params.endpoint = opts_.reducers[r];
      params.reducer = r;
      params.hello.session = opts_.session;
      params.hello.rank = opts_.rank;
      params.hello.world = opts_.world;
      params.hello.stream = static_cast<uint16_t>(s);
      params.hello.streams = static_cast<uint16_t>(opts_.streams_per_reducer);
      params.token = opts_.job_token;
      params.connect_deadline = deadline;
      params.send_window_bytes = opts_.send_window_bytes;
      params.liveness_timeout = opts_.liveness_timeout;
      params.crc = opts_.crc;
      streams_[r].push_back(
          std::make_shared<ReducerStream>(*contexts_[next++ % contexts_.size()], std::move(params), this));
      ++total_streams_;
    }
  }
  for (auto& per_reducer : streams_) {
    for (auto& stream : per_reducer) stream->Start();
  }
  for (auto& ctx : contexts_) threads_.emplace_back([this, c = ctx.get()] { RunIoLoop(*c); });

  std::unique_lock<std::mutex> lock(mu_);
  const bool settled = cv_.wait_until(lock, deadline + std::chrono::milliseconds(500), [this] {
    return !health_.ok() || ready_streams_ == total_streams_;
  });
  if (!health_.ok()) return health_;
  if (!settled) {
    std::vector<std::string> waiting;
    for (auto& r : opts_.reducers) waiting.push_back(r.ToString());
    lock.unlock();
    Status st(Code::kTimeout,
              "session not ready after " + std::to_string(opts_.connect_timeout.count()) +
                  " ms: not every rank has joined every reducer (" + List(waiting) +
                  "); check that all ranks started with the same world size and reducer list");
    Fail(st);
    return st;
  }
  piece_bytes_ = std::min<uint64_t>(opts_.max_piece_bytes, max_piece_bytes_);
  lock.unlock();
  sweep_ = std::make_unique<asio::steady_timer>(*contexts_[0]);
  asio::post(*contexts_[0], [this] { ArmSweep(); });
  return Status::Ok();
}

ClientImpl::~ClientImpl() {
  const bool healthy = health().ok();
  for (auto& per_reducer : streams_) {
    for (auto& stream : per_reducer) stream->Close(/*bye=*/healthy);
  }
  if (sweep_) asio::post(*contexts_[0], [this] { sweep_->cancel(); });
  {
    // Let the goodbyes go out, but never wait long for a dead peer.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(2), [this] { return closed_streams_ == total_streams_; });
  }
  for (auto& g : guards_) g.reset();
  for (auto& ctx : contexts_) ctx->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  sweep_.reset();
  streams_.clear();
  contexts_.clear();
}

std::shared_ptr<Operation> ClientImpl::AllReduce(const void* send, void* recv, size_t count, DataType dtype,
                                                 ReduceOp op) {
  const uint64_t seq = next_seq_++;
  if (count > 0 && (send == nullptr || recv == nullptr)) {
    return FailedOp(seq, send, recv, count, dtype, op,
                    Status(Code::kInvalidArgument, "all-reduce of " + std::to_string(count) +
                                                       " elements with a null buffer"));
  }
  protocol::PartitionParams params;
  params.count = count;
  params.elem_size = DataTypeSize(dtype);
  params.max_piece_bytes = piece_bytes_;
  params.min_piece_bytes = opts_.min_piece_bytes;
  params.reducers = static_cast<uint32_t>(streams_.size());
  params.streams = static_cast<uint32_t>(opts_.streams_per_reducer);
  params.seq = seq;
  auto op_state = std::make_shared<OperationImpl>(seq, send, recv, count, dtype, op, protocol::Partition(params),
                                                  params.reducers, Clock::now());
  if (op_state->pieces().empty()) return op_state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!health_.ok()) {
      op_state->Finish(health_);
      return op_state;
    }
    ops_.emplace(seq, op_state);
  }
  // One batch per stream, in piece order, so every rank feeds each stream
  // in the same order (the reducer's memory back-pressure relies on it).
  std::vector<std::vector<std::vector<PieceSend>>> batches(
      streams_.size(), std::vector<std::vector<PieceSend>>(opts_.streams_per_reducer));
  const size_t elem = DataTypeSize(dtype);
  for (const protocol::PieceSpan& p : op_state->pieces()) {
    protocol::PieceHeader h;
    h.seq = seq;
    h.piece = p.index;
    h.pieces = static_cast<uint32_t>(op_state->pieces().size());
    h.dtype = dtype;
    h.op = op;
    h.total_count = count;
    h.offset = p.offset;
    h.count = p.count;
    PieceSend s;
    s.data = static_cast<const uint8_t*>(send) + p.offset * elem;
    s.bytes = p.count * elem;
    if (opts_.crc) {
      h.flags |= protocol::kPieceCrc;
      h.crc = protocol::Crc32c(s.data, s.bytes);
    }
    protocol::EncodePieceFrame(protocol::FrameType::kData, h, &s.head);
    if (!op_state->Acquire()) break;  // failed meanwhile
    s.op = op_state;
    batches[p.reducer][p.stream].push_back(std::move(s));
  }
  for (size_t r = 0; r < batches.size(); ++r) {
    for (size_t s = 0; s < batches[r].size(); ++s) {
      if (!batches[r][s].empty()) streams_[r][s]->Send(std::move(batches[r][s]));
    }
  }
  return op_state;
}

std::shared_ptr<OperationImpl> ClientImpl::FailedOp(uint64_t seq, const void* send, void* recv, size_t count,
                                                    DataType dtype, ReduceOp op, const Status& status) {
  auto failed = std::make_shared<OperationImpl>(seq, send, recv, count, dtype, op,
                                                std::vector<protocol::PieceSpan>{protocol::PieceSpan{0, 0, 1, 0, 0}}, 1,
                                                Clock::now());
  failed->Finish(status);
  return failed;
}

void ClientImpl::OnStreamReady(uint32_t reducer, uint64_t max_piece_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  ++ready_streams_;
  max_piece_bytes_ = std::min(max_piece_bytes_, max_piece_bytes);
  if (ready_streams_ == total_streams_) cv_.notify_all();
}

void ClientImpl::OnStreamClosed() {
  std::lock_guard<std::mutex> lock(mu_);
  ++closed_streams_;
  cv_.notify_all();
}

std::shared_ptr<OperationImpl> ClientImpl::FindOperation(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ops_.find(seq);
  return it == ops_.end() ? nullptr : it->second;
}

void ClientImpl::OperationComplete(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  ops_.erase(seq);
}

void ClientImpl::Fail(const Status& status) {
  std::unordered_map<uint64_t, std::shared_ptr<OperationImpl>> ops;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!health_.ok()) return;
    health_ = status;
    ops.swap(ops_);
    cv_.notify_all();
  }
  Log(LogLevel::kError, "rank " + std::to_string(opts_.rank) + ": " + status.ToString());
  for (auto& [seq, op] : ops) op->Finish(status);
  for (auto& per_reducer : streams_) {
    for (auto& stream : per_reducer) stream->Abort(status);
  }
}

void ClientImpl::ArmSweep() {
  const auto period = std::clamp(opts_.op_timeout / 10, std::chrono::milliseconds(10),
                                 std::chrono::milliseconds(1000));
  sweep_->expires_after(period);
  sweep_->async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    std::shared_ptr<OperationImpl> late;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto now = Clock::now();
      for (auto& [seq, op] : ops_) {
        if (now - op->start() > opts_.op_timeout && (!late || op->seq() < late->seq())) late = op;
      }
    }
    if (late) {
      std::vector<std::string> names;
      for (uint32_t r : late->PendingReducers()) names.push_back(opts_.reducers[r].ToString());
      Fail(Status(Code::kTimeout, "operation " + std::to_string(late->seq()) + " got no result within " +
                                      std::to_string(opts_.op_timeout.count()) + " ms from reducer(s) " +
                                      List(names) + " (reducer dead or link cut?)"));
      return;
    }
    ArmSweep();
  });
}

void ClientImpl::RunIoLoop(asio::io_context& io) {
  // An exception escaping a handler would end the process this library
  // lives in (NCCL's, the user's training job): fail the session instead and
  // keep the loop running, so that the streams still close and the owner's
  // destructor can join this thread. io_context::run may be called again
  // after a handler threw.
  while (true) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      Fail(Status(Code::kInternal, std::string("internal error on the client's I/O thread: ") + e.what()));
    } catch (...) {
      Fail(Status(Code::kInternal, "internal error on the client's I/O thread: unknown exception"));
    }
  }
}

void ClientImpl::Log(LogLevel level, const std::string& message) {
  if (!opts_.log) {
    if (level >= LogLevel::kWarn) std::fprintf(stderr, "reducer client: %s\n", message.c_str());
    return;
  }
  // The callback is the user's: whatever it throws stays here (this runs on
  // I/O threads, and from Fail while handling another exception).
  try {
    opts_.log(level, message);
  } catch (...) {
    std::fprintf(stderr, "reducer client: the log callback threw; message was: %s\n", message.c_str());
  }
}

}  // namespace

StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  auto client = std::make_unique<ClientImpl>(std::move(options));
  Status st = client->Connect();
  if (!st.ok()) return st;
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace rs::client
