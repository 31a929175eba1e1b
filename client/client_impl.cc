#include "client/client_impl.h"

#include <algorithm>
#include <cstdio>

#include "client/transport_plan.h"
#include "client/wire_codec.h"
#include "common/host_capacity.h"
#include "common/io_context.h"
#include "common/units.h"
#include "protocol/liveness.h"

namespace rs::client {
namespace {

std::string List(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

// How long a change of epoch may take before the session gives up: every
// rank reports as soon as it hears of the change, so this only bounds what
// the liveness checks do not already catch.
std::chrono::milliseconds ChangeTimeout(const ClientOptions& o) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(10), 4 * o.liveness_timeout);
}

// The I/O threads when the user sets none (common/host_capacity.h): from the
// link the caller names, else the interface the route to the first reducer
// leaves by. A stream stays on one thread, so threads beyond the streams
// would idle.
IoThreadChoice ChooseIoThreads(const ClientOptions& o, int streams) {
  const std::string& first = o.reducers.front().host;
  HostCapacity host;
  if (o.link_bits_per_second) {
    host = CapacityWith(std::nullopt, "given by the caller");
    host.link_bits_per_second = o.link_bits_per_second;
  } else {
    host = CapacityWith(InterfaceTowards(first), "no route to " + first + " found");
  }
  const std::string what = std::to_string(streams) + " stream" + (streams == 1 ? "" : "s") +
                           " in all (REDUCER_STREAMS, the same on every rank, adds more)";
  return AutoIoThreads(host, streams, what);
}

}  // namespace

ClientImpl::ClientImpl(ClientOptions options)
    : opts_(std::move(options)), retention_(opts_.retention_bytes) {
  for (const Endpoint& e : opts_.reducers) names_.push_back(e.ToString());
}

Status ClientImpl::Connect() {
  if (opts_.reducers.empty()) return Status(Code::kInvalidArgument, "no reducers given");
  if (opts_.reducers.size() > protocol::kMaxReducers) {
    return Status(Code::kInvalidArgument, std::to_string(opts_.reducers.size()) + " reducers; at most " +
                                              std::to_string(protocol::kMaxReducers));
  }
  if (opts_.world == 0 || opts_.rank >= opts_.world) {
    return Status(Code::kInvalidArgument, "rank " + std::to_string(opts_.rank) + " is not below world size " +
                                              std::to_string(opts_.world));
  }
  if (opts_.world > protocol::kMaxWorld) {
    return Status(Code::kInvalidArgument, "world size " + std::to_string(opts_.world) + " exceeds the protocol's " +
                                              std::to_string(protocol::kMaxWorld));
  }
  const uint32_t reducers = static_cast<uint32_t>(opts_.reducers.size());
  streams_ = opts_.streams_per_reducer.value_or(AutoStreams(reducers));
  piece_request_ = opts_.max_piece_bytes.value_or(AutoPieceBytes(reducers));
  min_piece_ = opts_.min_piece_bytes.value_or(AutoMinPieceBytes(opts_.world));
  if (min_piece_ < 1) return Status(Code::kInvalidArgument, "the smallest piece must be at least 1 byte");
  if (!opts_.min_piece_bytes && min_piece_ < kMaxAutoMinPiece) {
    Log(LogLevel::kInfo, "small all-reduces are cut into pieces down to " + FormatBytes(min_piece_) +
                             " to reach more reducers (automatic: 256 KiB / " + std::to_string(opts_.world) +
                             " ranks; REDUCER_MIN_PIECE sets it)");
  }
  if (streams_ < 1 || streams_ > protocol::kMaxStreams) {
    return Status(Code::kInvalidArgument,
                  "streams per reducer must be 1 to " + std::to_string(protocol::kMaxStreams));
  }
  tcp_pacing_ = opts_.tcp_pacing.value_or(AutoTcpPacing(opts_.world, streams_));
  if (tcp_pacing_ && !opts_.tcp_pacing) {
    const uint64_t fan_in = uint64_t{opts_.world} * static_cast<uint64_t>(streams_);
    Log(LogLevel::kInfo, "TCP pacing on the streams to the reducers (automatic: each reducer hears " +
                             std::to_string(fan_in) + " streams, at least " + std::to_string(kPacedFanIn) +
                             "; REDUCER_TCP_PACING=0 turns it off)");
  }
  if (piece_request_ < kMinMaxPieceBytes) {
    return Status(Code::kInvalidArgument, "piece size must be at least " + FormatBytes(kMinMaxPieceBytes));
  }
  if (opts_.liveness_timeout.count() < 0 || opts_.liveness_timeout > kMaxTimeout) {
    return Status(Code::kInvalidArgument, "liveness timeout must be 0 (off) to " +
                                              std::to_string(kMaxTimeout / std::chrono::hours(1)) + " h");
  }
  if (opts_.liveness_timeout.count() > 0 && opts_.liveness_timeout < kMinLivenessTimeout) {
    return Status(Code::kInvalidArgument, "liveness timeout must be at least 100 ms (or 0 for off)");
  }
  if (opts_.wire_dtype != DataType::kFloat32 && opts_.wire_dtype != DataType::kBfloat16 &&
      opts_.wire_dtype != DataType::kFloat16) {
    return Status(Code::kInvalidArgument, "wire type " + std::string(DataTypeName(opts_.wire_dtype)) +
                                              " is not one of off (float32), bfloat16, float16");
  }
  if (opts_.min_reducers < 1 || opts_.min_reducers > opts_.reducers.size()) {
    return Status(Code::kInvalidArgument, "min_reducers is " + std::to_string(opts_.min_reducers) +
                                              "; it must be 1 to the number of reducers (" +
                                              std::to_string(opts_.reducers.size()) + ")");
  }
  if (opts_.tls) {
    auto tls = DataTls::Create(DataTls::Role::kWorker, opts_.job_token);
    if (!tls.ok()) return tls.status().Prefixed("REDUCER_TLS=1");
    data_tls_ = std::move(tls).value();
    Log(LogLevel::kInfo, "to the reducers: " + DataTls::Describe());
  }
  if (opts_.wire_dtype != DataType::kFloat32) {
    Log(LogLevel::kInfo, "float32 sums go as " + std::string(DataTypeName(opts_.wire_dtype)) +
                             " on the wire; conversions built for " + WireCodecImplementation());
  }
  if (opts_.failover) {
    MutexLock lock(mu_);  // no I/O thread runs yet; the lock is for the analysis
    membership_.emplace(names_, opts_.min_reducers, ChangeTimeout(opts_));
  }
  int threads = opts_.io_threads.value_or(0);
  if (threads < 1) {
    const IoThreadChoice choice = ChooseIoThreads(opts_, static_cast<int>(opts_.reducers.size()) * streams_);
    threads = choice.threads;
    // Said at level warn (stderr by default) when too few streams hold a fast
    // link to half the threads it needs or fewer: the user can lift that.
    const bool starved = choice.from_link && threads * 2 <= choice.wanted;
    Log(starved ? LogLevel::kWarn : LogLevel::kInfo,
        std::to_string(threads) + " I/O thread" + (threads == 1 ? "" : "s") + " (automatic: " + choice.reason +
            "; REDUCER_IO_THREADS sets them)" +
            (starved ? "; this link wants " + std::to_string(choice.wanted) + ": set REDUCER_STREAMS=" +
                           std::to_string((choice.wanted + opts_.reducers.size() - 1) / opts_.reducers.size()) +
                           " on every rank"
                     : ""));
  }
  for (int i = 0; i < threads; ++i) {
    contexts_.push_back(MakeIoContext());
    guards_.push_back(asio::make_work_guard(*contexts_.back()));
  }
  const auto start = Clock::now();
  const auto deadline = start + opts_.connect_timeout;
  size_t total_streams = 0;
  {
    MutexLock lock(mu_);
    grace_end_ = start + Grace();
    reach_.resize(opts_.reducers.size());
    slots_.resize(opts_.reducers.size());
    for (uint32_t r = 0; r < slots_.size(); ++r) {
      OpenStreamsLocked(r, deadline);
      slots_[r].state = Slot::State::kLive;
      total_streams += slots_[r].streams.size();
    }
  }
  for (auto& ctx : contexts_) threads_.emplace_back([this, c = ctx.get()] { RunIoLoop(*c); });

  UniqueLock lock(mu_);
  const auto settled_now = [&]() RS_REQUIRES(mu_) { return !health_.ok() || ready_streams_ == total_streams; };
  bool settled = false;
  if (start + kNoAnswerWarning < deadline) {
    settled = cv_.wait_until(lock.native(), start + kNoAnswerWarning, settled_now);
    if (!settled) {
      // A connect with no answer yet is said early too, and waited for.
      WarnUnansweredLocked();
      lock.unlock();
      FlushLogs();
      lock.lock();
    }
  }
  if (!settled) settled = cv_.wait_until(lock.native(), deadline + std::chrono::milliseconds(500), settled_now);
  if (!health_.ok()) return health_;
  if (!settled) {
    const std::string unreachable = UnreachableLocked();
    lock.unlock();
    const std::string waited = "session not ready after " + std::to_string(opts_.connect_timeout.count()) + " ms: ";
    Status st(Code::kTimeout,
              unreachable.empty()
                  ? waited + "not every rank has joined every reducer (" + List(names_) +
                        "); check that all ranks started with the same world size and reducer list"
                  : waited + "cannot connect to " + unreachable + "; check the reducers' addresses and that " +
                        "reducerd runs there (REDUCER_CONNECT_TIMEOUT bounds the wait)");
    Fail(st);
    return st;
  }
  piece_bytes_ = std::min<uint64_t>(piece_request_, max_piece_bytes_);
  connected_ = true;
  lock.unlock();
  sweep_ = std::make_unique<asio::steady_timer>(*contexts_[0]);
  asio::post(*contexts_[0], [this] { ArmSweep(); });
  return Status::Ok();
}

void ClientImpl::OpenStreamsLocked(uint32_t reducer, Clock::time_point deadline) {
  Slot& slot = slots_[reducer];
  ++slot.generation;
  slot.ready_streams = 0;
  slot.streams.clear();
  for (int s = 0; s < streams_; ++s) {
    StreamParams params;
    params.endpoint = opts_.reducers[reducer];
    params.id = StreamId{reducer, slot.generation};
    params.hello.session = opts_.session;
    params.hello.rank = opts_.rank;
    params.hello.world = opts_.world;
    params.hello.stream = static_cast<uint16_t>(s);
    params.hello.streams = static_cast<uint16_t>(streams_);
    // Results in parts: the reducer sends each run of a piece as soon as
    // every rank's share of it is in.
    params.hello.flags = protocol::kHelloResultParts | (opts_.failover ? protocol::kHelloFailover : 0u);
    params.hello.wire = opts_.wire_dtype;
    params.wire_fallbacks = &wire_fallbacks_;
    params.token = opts_.job_token;
    params.tls = data_tls_;
    params.connect_deadline = deadline;
    // A reducer being taken back (failover) may refuse until its deadline.
    params.connect_grace_end = connected_ ? deadline : std::min(grace_end_, deadline);
    params.send_window_bytes = opts_.send_window_bytes;
    params.piece_bytes = piece_request_;
    params.liveness_timeout = opts_.liveness_timeout;
    params.crc = opts_.crc;
    params.rank_streams = opts_.reducers.size() * static_cast<size_t>(streams_);
    params.interleave = params.rank_streams > 1;
    params.write_slice_bytes = opts_.write_slice_bytes;
    params.tcp = opts_.tcp;
    params.tcp.pacing = tcp_pacing_;
    auto stream =
        std::make_shared<ReducerStream>(*contexts_[next_context_++ % contexts_.size()], std::move(params), this);
    slot.streams.push_back(stream);
    ++open_streams_;
    stream->Start();
  }
}

ClientImpl::~ClientImpl() {
  std::vector<std::shared_ptr<ReducerStream>> streams;
  bool healthy = false;
  {
    MutexLock lock(mu_);
    healthy = health_.ok();
    for (Slot& slot : slots_) {
      // Goodbyes only where a session is ready and in use.
      const bool bye = healthy && slot.state == Slot::State::kLive;
      for (auto& s : slot.streams) {
        // A failed client tells the reducers why once more: Fail's aborts may
        // not have run yet, and a plain close would reach the reducers as
        // "rank N disconnected" instead of the cause. Whichever abort runs
        // first sends the ERROR frame.
        if (healthy) {
          s->Close(bye);
        } else {
          s->Abort(health_);
        }
        streams.push_back(s);
      }
    }
  }
  if (sweep_) asio::post(*contexts_[0], [this] { sweep_->cancel(); });
  {
    // Let the goodbyes go out, but never wait long for a dead peer.
    UniqueLock lock(mu_);
    cv_.wait_for(lock.native(), std::chrono::seconds(2), [this]() RS_REQUIRES(mu_) { return open_streams_ == 0; });
  }
  for (auto& g : guards_) g.reset();
  for (auto& ctx : contexts_) ctx->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  sweep_.reset();
  streams.clear();
  slots_.clear();
  ops_.clear();
  contexts_.clear();
  // No I/O thread runs any more. An operation still in flight would never
  // be done, and a caller waiting on it (another thread, say, while this
  // one closes the client) would wait for ever.
  for (const auto& weak : handed_out_) {
    if (auto op = weak.lock()) {
      op->Abandon(Status(Code::kCancelled, "rank " + std::to_string(opts_.rank) + ": the client was closed before " +
                                               "operation " + std::to_string(op->seq()) + " completed"));
    }
  }
}

Status ClientImpl::health() const {
  MutexLock lock(mu_);
  return health_;
}

ClientStats ClientImpl::stats() const {
  MutexLock lock(mu_);
  ClientStats out = counters_;
  out.epoch = membership_ ? membership_->epoch() : 0;
  out.live_reducers = membership_ ? membership_->live().Count() : slots_.size();
  out.retained_bytes = retention_.in_use();
  out.retained_peak_bytes = retention_.peak();
  out.streams_per_reducer = streams_;
  out.io_threads = static_cast<int>(contexts_.size());
  out.piece_bytes = piece_bytes_;
  out.min_piece_bytes = min_piece_;
  out.tcp_paced = tcp_pacing_;
  for (const Slot& slot : slots_) {
    for (const auto& stream : slot.streams) {
      const size_t w = stream->send_window();
      out.send_window_min = out.send_window_min == 0 ? w : std::min(out.send_window_min, w);
      out.send_window_max = std::max(out.send_window_max, w);
      const TcpWaitTotals waits = stream->tcp_waits();
      out.tcp_busy_us += waits.busy_us;
      out.tcp_rwnd_limited_us += waits.rwnd_limited_us;
      out.tcp_sndbuf_limited_us += waits.sndbuf_limited_us;
      out.writes_cut_small += stream->writes_cut_small();
    }
  }
  out.wire_fallbacks = wire_fallbacks_.load(std::memory_order_relaxed);
  return out;
}

std::vector<protocol::PieceSpan> ClientImpl::PartitionLocked(uint64_t seq, uint64_t count, DataType dtype) const {
  std::vector<uint32_t> live;
  if (membership_) {
    live = membership_->live().Members();
  } else {
    for (uint32_t r = 0; r < slots_.size(); ++r) live.push_back(r);
  }
  protocol::PartitionParams params;
  params.count = count;
  params.elem_size = DataTypeSize(dtype);
  params.max_piece_bytes = piece_bytes_;
  params.min_piece_bytes = min_piece_;
  params.reducers = static_cast<uint32_t>(live.size());
  params.streams = static_cast<uint32_t>(streams_);
  params.seq = seq;
  std::vector<protocol::PieceSpan> pieces = protocol::Partition(params);
  for (protocol::PieceSpan& p : pieces) p.reducer = live[p.reducer];  // the epoch's k-th live reducer
  return pieces;
}

void ClientImpl::IssueLocked(const std::shared_ptr<OperationImpl>& op, Batches* batches) {
  // One batch per stream, in piece order, so every rank feeds each stream
  // in the same order (the reducer's memory back-pressure relies on it).
  const std::vector<protocol::PieceSpan> pieces = op->pieces();
  const size_t elem = DataTypeSize(op->dtype());
  const uint32_t epoch = op->epoch();
  const uint64_t watermark = membership_ ? ReportedLocked() : 0;
  // Each stream's writes of it at most an eighth of its share (OperationSlice).
  std::vector<uint8_t> used(slots_.size() * static_cast<size_t>(streams_), 0);
  size_t lanes = 0;
  for (const protocol::PieceSpan& p : pieces) {
    const size_t lane = static_cast<size_t>(p.reducer) * static_cast<size_t>(streams_) + p.stream;
    if (lane < used.size() && used[lane] == 0) {
      used[lane] = 1;
      ++lanes;
    }
  }
  const size_t wire_elem = op->wire() != DataType::kFloat32 ? DataTypeSize(op->wire()) : elem;
  const size_t slice = lanes == 0 ? 0 : OperationSlice(op->count() * wire_elem / lanes);
  for (const protocol::PieceSpan& p : pieces) {
    protocol::PieceHeader h;
    h.seq = op->seq();
    h.piece = p.index;
    h.pieces = static_cast<uint32_t>(pieces.size());
    h.dtype = op->dtype();
    h.op = op->op();
    h.total_count = op->count();
    h.offset = p.offset;
    h.count = p.count;
    h.epoch = epoch;
    h.watermark = watermark;
    PieceSend s;
    if (op->wire() != DataType::kFloat32) {
      // Narrowed when written (ReducerStream::WriteNext), which re-encodes
      // the header with the type the elements go in.
      h.flags = protocol::kPieceWideSum;
      s.wire = op->wire();
      s.header = h;
    }
    // A narrowed copy gives its pieces' bytes when they are written (SendQueue).
    s.data = op->narrowed() ? nullptr : op->source() + p.offset * elem;
    s.bytes = p.count * elem;
    s.epoch = epoch;
    s.slice = slice;
    s.crc = opts_.crc;
    protocol::EncodePieceFrame(protocol::FrameType::kData, h, &s.head);
    s.lease = OperationImpl::Lease(op);
    if (!s.lease) break;  // failed meanwhile
    (*batches)[{p.reducer, p.stream}].push_back(std::move(s));
  }
}

void ClientImpl::PostLocked(Batches* batches) {
  // One handler per I/O thread, its streams in reducer order
  // (ReducerStream::SendTogether).
  std::vector<std::pair<asio::io_context*, ReducerStream::StreamSends>> by_thread;
  for (auto& [key, sends] : *batches) {
    Slot& slot = slots_[key.first];
    if (key.second >= slot.streams.size() || slot.state != Slot::State::kLive) {
      sends.clear();  // lost meanwhile: their leases go back, and the next epoch redoes them
      continue;
    }
    const std::shared_ptr<ReducerStream>& stream = slot.streams[key.second];
    auto thread = std::find_if(by_thread.begin(), by_thread.end(),
                               [&](const auto& entry) { return entry.first == &stream->io(); });
    if (thread == by_thread.end()) {
      by_thread.emplace_back(&stream->io(), ReducerStream::StreamSends{});
      thread = by_thread.end() - 1;
    }
    thread->second.emplace_back(stream, std::move(sends));
  }
  for (auto& [io, sends] : by_thread) ReducerStream::SendTogether(*io, std::move(sends));
  batches->clear();
}

uint64_t ClientImpl::WatermarkLocked() const { return ops_.empty() ? next_seq_ : ops_.begin()->first; }

uint64_t ClientImpl::ReportedLocked() const {
  return membership_ ? membership_->ReportedWatermark(WatermarkLocked()) : WatermarkLocked();
}

std::shared_ptr<Operation> ClientImpl::AllReduce(const void* send, void* recv, size_t count, DataType dtype,
                                                 ReduceOp op) {
  UniqueLock lock(mu_);
  const uint64_t seq = next_seq_++;
  if (count > 0 && (send == nullptr || recv == nullptr)) {
    return FailedOp(seq, send, recv, count, dtype, op,
                    Status(Code::kInvalidArgument, "all-reduce of " + std::to_string(count) +
                                                       " elements with a null buffer"));
  }
  if (!health_.ok()) return FailedOp(seq, send, recv, count, dtype, op, health_);
  const uint32_t epoch = membership_ ? membership_->epoch() : 0;
  auto op_state = std::make_shared<OperationImpl>(seq, send, recv, count, dtype, op, epoch,
                                                  PartitionLocked(seq, count, dtype),
                                                  static_cast<uint32_t>(slots_.size()), Clock::now(),
                                                  opts_.wire_dtype);
  if (count == 0) return op_state;
  ops_.emplace(seq, OpEntry{op_state, false});
  handed_out_.push_back(op_state);
  if (handed_out_.size() >= prune_handed_out_at_) {
    std::erase_if(handed_out_, [](const std::weak_ptr<OperationImpl>& w) { return w.expired(); });
    prune_handed_out_at_ = std::max<size_t>(64, 2 * handed_out_.size());
  }
  Batches batches;
  if (!membership_) {
    ops_[seq].issued = true;
    IssueLocked(op_state, &batches);
    PostLocked(&batches);
    return op_state;
  }
  // Failover: a copy of the input this rank keeps until every rank is done,
  // made while the pieces go out (copy_behind.h).
  const RetainedCopy copy = waiting_.empty()
                               ? retention_.Allocate(seq, op_state->RetainedBytes(), membership_->changing())
                               : RetainedCopy{};
  if (copy.data == nullptr) {
    // Full: wait until the others catch up (never blocks the caller).
    waiting_.push_back(seq);
    ++counters_.retention_waits;
    SendWatermarkLocked();
    return op_state;
  }
  op_state->RetainInto(copy);
  retained_[seq] = Retained{copy.data, copy.lease, op_state->narrowed(), count, dtype, op, false};
  ops_[seq].issued = true;
  IssueLocked(op_state, &batches);
  PostLocked(&batches);
  lock.unlock();
  op_state->CopyInput();
  return op_state;
}

std::shared_ptr<OperationImpl> ClientImpl::FailedOp(uint64_t seq, const void* send, void* recv, size_t count,
                                                    DataType dtype, ReduceOp op, const Status& status) {
  auto failed = std::make_shared<OperationImpl>(seq, send, recv, count, dtype, op, 0,
                                                std::vector<protocol::PieceSpan>{protocol::PieceSpan{0, 0, 1, 0, 0}},
                                                1, Clock::now());
  failed->Finish(status);
  return failed;
}

bool ClientImpl::Current(StreamId id) const {
  return id.reducer < slots_.size() && slots_[id.reducer].generation == id.generation;
}

void ClientImpl::OnStreamReady(StreamId id, uint64_t max_piece_bytes) {
  Status fail;
  {
    MutexLock lock(mu_);
    if (!Current(id)) return;
    if (!connected_) {
      ++ready_streams_;
      max_piece_bytes_ = std::min(max_piece_bytes_, max_piece_bytes);
      cv_.notify_all();
      return;
    }
    Slot& slot = slots_[id.reducer];
    if (slot.state != Slot::State::kRejoining) return;
    if (max_piece_bytes < piece_bytes_) {
      LogLocked(LogLevel::kWarn, "reducer " + names_[id.reducer] + " came back accepting pieces of " +
                               std::to_string(max_piece_bytes) + " bytes, smaller than this session's " +
                               std::to_string(piece_bytes_) + ": not taking it back");
      LostLocked(id.reducer, Status(Code::kMismatch, "piece limit too small"), Clock::now(), &fail);
    } else if (++slot.ready_streams == slot.streams.size()) {
      slot.state = Slot::State::kReady;
      LogLocked(LogLevel::kInfo, "reducer " + names_[id.reducer] + " is back; proposing to take it back");
      fail = ApplyLocked(membership_->OnReady(id.reducer, ReportedLocked(), Clock::now()), Clock::now());
    }
  }
  FlushLogs();
  if (!fail.ok()) Fail(fail);
}

void ClientImpl::OnStreamLost(StreamId id, const Status& status) {
  Status fail;
  {
    MutexLock lock(mu_);
    if (!Current(id)) return;
    if (!connected_ && !reach_[id.reducer].connected && reach_[id.reducer].failure) {
      // It gave up connecting: name every reducer not reached, not just it.
      const std::string tried = EndsAfterGrace(*reach_[id.reducer].failure)
                                    ? "the " + protocol::FormatSeconds(Grace()) + " start-up grace"
                                    : "the " + protocol::FormatSeconds(opts_.connect_timeout) + " connect timeout";
      fail = Status(Code::kIo, "cannot connect to " + UnreachableLocked() + " within " + tried +
                                   ": check the reducers' addresses and that reducerd runs there");
    } else if (!connected_ || !membership_) {
      fail = status;
    } else {
      LostLocked(id.reducer, status, Clock::now(), &fail);
    }
  }
  FlushLogs();
  if (!fail.ok()) Fail(fail);
}

void ClientImpl::OnStreamFailed(StreamId id, const Status& status) {
  Status fail;
  {
    MutexLock lock(mu_);
    if (!Current(id)) return;
    const Slot::State state = slots_[id.reducer].state;
    if (connected_ && membership_ && (state == Slot::State::kRejoining || state == Slot::State::kReady)) {
      // A reducer being taken back that fails is only not back yet.
      LostLocked(id.reducer, status, Clock::now(), &fail);
    } else {
      fail = status;
    }
  }
  FlushLogs();
  if (!fail.ok()) Fail(fail);
}

std::chrono::milliseconds ClientImpl::Grace() const {
  return std::clamp(opts_.connect_grace.value_or(opts_.connect_timeout / 3), std::chrono::milliseconds(0),
                    opts_.connect_timeout);
}

void ClientImpl::OnConnectAttempt(StreamId id, std::optional<ConnectFailure> failure, const std::string& error) {
  {
    MutexLock lock(mu_);
    if (connected_ || !Current(id)) return;  // a reducer being taken back is not news
    Reach& reach = reach_[id.reducer];
    if (!failure) {
      reach.connected = true;
      reach.failure.reset();
      return;
    }
    if (reach.connected) return;
    reach.failure = failure;
    reach.error = error;
    if (reach.warned == failure) return;
    reach.warned = failure;
    // At the first failure, so that a wrong address is seen at once and not
    // when the job gives up.
    const std::string what = "cannot connect to reducer " + names_[id.reducer] + ": " + error + " (" +
                             ConnectFailureHint(*failure) + "); ";
    LogLocked(LogLevel::kWarn,
              EndsAfterGrace(*failure)
                  ? what + "trying again for up to " + protocol::FormatSeconds(Grace()) +
                        " from the start in case it is still starting, then failing"
                  : what + "trying again until the connect timeout (" +
                        protocol::FormatSeconds(opts_.connect_timeout) + ")");
  }
  FlushLogs();
}

void ClientImpl::WarnUnansweredLocked() {
  for (uint32_t r = 0; r < reach_.size(); ++r) {
    Reach& reach = reach_[r];
    if (reach.connected || reach.failure) continue;
    reach.failure = reach.warned = ConnectFailure::kNoAnswer;
    reach.error = "no answer to connect";
    LogLocked(LogLevel::kWarn, "reducer " + names_[r] + " has not answered a connect in " +
                                   protocol::FormatSeconds(kNoAnswerWarning) + " (" +
                                   ConnectFailureHint(ConnectFailure::kNoAnswer) +
                                   "); trying until the connect timeout (" +
                                   protocol::FormatSeconds(opts_.connect_timeout) + ")");
  }
}

std::string ClientImpl::UnreachableLocked() const {
  std::vector<std::string> items;
  for (uint32_t r = 0; r < reach_.size(); ++r) {
    const Reach& reach = reach_[r];
    if (reach.connected || !reach.failure) continue;
    items.push_back(names_[r] + " (" + reach.error + ": " + ConnectFailureHint(*reach.failure) + ")");
  }
  if (items.empty()) return "";
  return (items.size() == 1 ? "reducer " : "reducers ") + List(items);
}

void ClientImpl::OnStreamClosed() {
  MutexLock lock(mu_);
  --open_streams_;
  cv_.notify_all();
}

std::shared_ptr<OperationImpl> ClientImpl::FindOperation(uint64_t seq) {
  MutexLock lock(mu_);
  auto it = ops_.find(seq);
  return it == ops_.end() ? nullptr : it->second.op;
}

void ClientImpl::OperationComplete(uint64_t seq) {
  MutexLock lock(mu_);
  ops_.erase(seq);
  if (!membership_) return;
  if (auto it = retained_.find(seq); it != retained_.end()) it->second.done = true;
  // Operations waiting for memory need the others to hear of this at once.
  if (!waiting_.empty()) SendWatermarkLocked();
}

void ClientImpl::Fail(const Status& status) {
  std::map<uint64_t, OpEntry> ops;
  {
    MutexLock lock(mu_);
    if (!health_.ok()) return;
    health_ = status;
    ops.swap(ops_);
    waiting_.clear();
    // The reducers must hear why (an ERROR frame), not a bare close that
    // they would pass on as "rank N disconnected": the aborts are posted
    // before any operation finishes and its caller can destroy the client
    // (whose destructor aborts too, ~ClientImpl).
    for (Slot& slot : slots_) {
      for (auto& stream : slot.streams) stream->Abort(status);
    }
    cv_.notify_all();
  }
  Log(LogLevel::kError, status.ToString());
  for (auto& [seq, entry] : ops) entry.op->Finish(status);
}

void ClientImpl::ArmSweep() {
  const auto period = std::clamp(opts_.op_timeout / 10, std::chrono::milliseconds(10),
                                 std::chrono::milliseconds(1000));
  sweep_->expires_after(period);
  sweep_->async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    Status fail;
    {
      MutexLock lock(mu_);
      const auto now = Clock::now();
      std::shared_ptr<OperationImpl> late;
      for (auto& [seq, entry] : ops_) {
        if (now - entry.op->start() > opts_.op_timeout && !entry.op->shadow()) {
          late = entry.op;
          break;  // the oldest
        }
      }
      if (late) {
        std::vector<std::string> names;
        for (uint32_t r : late->PendingReducers()) names.push_back(names_[r]);
        fail = Status(Code::kTimeout, "operation " + std::to_string(late->seq()) + " got no result within " +
                                          std::to_string(opts_.op_timeout.count()) + " ms from reducer(s) " +
                                          List(names) + " (reducer dead or link cut?)");
      } else if (membership_) {
        fail = SweepLocked(now);
      }
    }
    FlushLogs();
    if (!fail.ok()) {
      Fail(fail);
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

void ClientImpl::LogLocked(LogLevel level, std::string message) {
  pending_logs_.emplace_back(level, std::move(message));
}

void ClientImpl::FlushLogs() {
  std::vector<std::pair<LogLevel, std::string>> logs;
  {
    MutexLock lock(mu_);
    logs.swap(pending_logs_);
  }
  for (auto& [level, message] : logs) Log(level, message);
}

void ClientImpl::Log(LogLevel level, const std::string& message) {
  const std::string line = "rank " + std::to_string(opts_.rank) + ": " + message;  // the only place that names it
  if (!opts_.log) {
    if (level >= LogLevel::kWarn) std::fprintf(stderr, "reducer client: %s\n", line.c_str());
    return;
  }
  // The callback is the user's: whatever it throws stays here (this runs on
  // I/O threads, and from Fail while handling another exception).
  try {
    opts_.log(level, line);
  } catch (...) {
    std::fprintf(stderr, "reducer client: the log callback threw; message was: %s\n", line.c_str());
  }
}

}  // namespace rs::client
