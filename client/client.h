// The worker-side library: one Client per rank and session. It connects to
// every reducer (several TCP streams each), authenticates, waits until every
// rank has joined, then runs all-reduces on host memory asynchronously:
// each operation is cut into element-aligned pieces, each piece goes to the
// reducer that owns it, and the reduced piece comes back into the receive
// buffer. The partition is a pure function of (operation sequence, count,
// dtype, reducer count, piece size), so every rank computes the same one.
//
// Threading: Create() blocks until the session is ready. AllReduce() may be
// called from one thread at a time (operations are numbered in call order,
// which must be the same on every rank); Operation handles may be polled or
// waited on from any thread. Background I/O threads are owned by the Client
// and joined by its destructor. Nothing here knows NCCL.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/client_defaults.h"
#include "common/dtype.h"
#include "common/status.h"
#include "common/tcp_tuning.h"
#include "protocol/wire.h"

namespace rs::client {

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;
};
// Parses "host:port,host:port" ("[::1]:5000" for IPv6). An item may hold one
// range, "train-reducers-0-{0..3}.train:7450", which stands for the names
// with 0, 1, 2 and 3 in its place (Kubernetes' indexed pods).
StatusOr<std::vector<Endpoint>> ParseEndpoints(const std::string& list);

enum class LogLevel { kDebug, kInfo, kWarn, kError };
using LogFn = std::function<void(LogLevel, const std::string&)>;

// The shortest liveness timeout other than 0 (off); heartbeats go at a fifth
// of it. The client, the plugin, reducer-bench and rs-train check against it.
inline constexpr std::chrono::milliseconds kMinLivenessTimeout{100};

struct ClientOptions {
  std::vector<Endpoint> reducers;
  protocol::SessionId session{};
  uint32_t rank = 0;
  uint32_t world = 1;
  std::string job_token;  // empty: no authentication
  // TLS 1.3 to every reducer, keyed by job_token (common/data_tls.h;
  // REDUCER_TLS): a reducer without TLS is refused, never used in the clear.
  bool tls = kDefaultTls.value;
  // Streams, piece size and send window: unset (nullopt) means the client
  // chooses (transport_plan.h): 1 stream per reducer, 512 KiB / reducers
  // per piece (64 KiB to 512 KiB), a window of 4 pieces or more on paths
  // with a large bandwidth-delay product. A value given here always wins.
  std::optional<int> streams_per_reducer;  // must be the same on every rank
  // I/O threads; unset: chosen from this rank's link speed and usable cores
  // (common/host_capacity.h), at most one per stream, and logged once.
  std::optional<int> io_threads;
  // This rank's link speed in bits per second where the caller knows it (the
  // NCCL plugin: its NIC's, or REDUCER_NIC_SPEED); unset: the speed of the
  // interface the route to the first reducer leaves by, when it reports one.
  std::optional<uint64_t> link_bits_per_second;
  // Upper bound for one piece; the reducers may announce a smaller one.
  // Must be the same on every rank (a difference is reported as a mismatch):
  // the automatic one depends only on the number of reducers.
  std::optional<size_t> max_piece_bytes;
  // Below this an operation is not split further to reach every reducer.
  // Must be the same on every rank; unset: 256 KiB / world, 4 KiB to 64 KiB
  // (transport_plan.h), which every rank derives alike.
  std::optional<size_t> min_piece_bytes;
  // Connecting, authenticating and waiting for every rank to join.
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout.value;
  // The start-up grace: a reducer that refuses the connection (nothing
  // listens there) or cannot be routed to is tried again only this long
  // after Create, then Create fails naming every reducer it could not reach
  // (client/connect_retry.h). The first failure is logged at once. Unset: a
  // third of connect_timeout (20 s of the default 60 s): reducers started
  // with the job listen within seconds of their container starting, so
  // past that the address is wrong or reducerd is not running; a slow fleet
  // gets more with a longer connect timeout. A reducer that does not answer
  // at all, or whose name does not resolve yet, is waited for until
  // connect_timeout (logged once after 3 s).
  std::optional<std::chrono::milliseconds> connect_grace;
  // An operation with no answer from a reducer for this long fails locally,
  // naming the reducer. Keep it above the reducers' --op-timeout so their
  // error (which names the missing ranks) arrives first.
  std::chrono::milliseconds op_timeout = kDefaultOpTimeout.value;
  // A stream on which nothing at all arrives for this long means the
  // reducer is frozen, its host dead or the link cut: the session fails
  // (naming the reducer and the silence) within this bound plus a tenth,
  // instead of waiting for op_timeout. Both ends send heartbeats at a fifth
  // of it and TCP_USER_TIMEOUT is set to twice it; the reducers use the same value
  // to detect a silent worker. 0: off (only op_timeout applies).
  std::chrono::milliseconds liveness_timeout = kDefaultLivenessTimeout.value;
  // End-to-end integrity: a CRC32C over every piece this rank sends, checked
  // by the reducer, and over every result, checked here (when the reducer
  // has its check on too). A mismatch fails the session naming the hop
  // ("rank 2 -> reducer 10.0.0.5:7450"). Off by default: it costs one more
  // pass over the data on each side, measured at 3-10 % of a reducer's CPU
  // (docs/reliability.md), above the 3 % the project accepts by default.
  bool crc = kDefaultCrc.value;
  // The type float32 sums travel in (REDUCER_WIRE_DTYPE): kFloat32 ("off",
  // the default), kBfloat16 or kFloat16. Each piece is rounded to it (to
  // nearest even) as it is written; the reducer widens every rank's piece,
  // sums in rank order in float32 and rounds the result once; it is widened
  // back into the receive buffer. Half the bytes, two roundings per element
  // whatever the world size, results still bitwise identical on every rank.
  // A piece with a value the wire type cannot hold (Inf, NaN, beyond
  // float16's +-65504) goes as float32 (ClientStats::wire_fallbacks), and so
  // does a result part whose sum does not fit. Only float32 sums use it;
  // other types and ops ignore it. Every rank must use the same setting.
  DataType wire_dtype = kDefaultWireDtype.value;
  // Failover: when a reducer is lost (frozen, dead, cut off, shutting down)
  // the ranks agree on a new set of reducers and go on with the survivors,
  // redoing the operations that had not completed everywhere; results stay
  // bitwise identical. A lost reducer that comes back at the same address
  // (a restarted pod) is taken back. Costs a copy of every operation's input
  // (kept until every rank has completed the operation) and up to
  // retention_bytes of memory. Off: losing a reducer fails the session, at
  // no cost. Every rank must use the same setting.
  bool failover = kDefaultFailover.value;
  // Below this many live reducers the session fails, saying so.
  uint32_t min_reducers = kDefaultMinReducers.value;
  // Memory for the copies failover keeps. When it is full, new operations
  // wait (not sent yet, not Done) until the others have caught up; an
  // operation larger than it is kept in its own allocation.
  size_t retention_bytes = kDefaultRetention.value;
  // Bytes of pieces one stream may have written without their results back
  // (0: no limit; one piece always goes). A piece completes only when every
  // rank's copy is in, so a stream that runs ahead of the others only fills
  // the reducer's memory while taking link share from the streams the
  // reducer waits for; the window keeps a worker's streams in step.
  // Unset: chosen per stream from what TCP measures on it (transport_plan.h).
  std::optional<size_t> send_window_bytes;
  // With streams to several reducers, bytes of pieces one stream writes at
  // a time, so the streams take turns on this rank's link (written whole,
  // each stream's batch queues behind the others' in the host's egress
  // queue and the last reducer starts late). Unset: half a millisecond of
  // the stream's measured bandwidth, at least 64 KiB (loopback's rate makes
  // it larger than any batch). 0: whole batches.
  std::optional<size_t> write_slice_bytes;
  // TCP on every stream (REDUCER_TCP_CONGESTION, REDUCER_TCP_RTO_MIN;
  // common/tcp_tuning.h): by default cubic (else reno) instead of a host's
  // bbr, and a 5 ms floor for the retransmission timeout where the kernel
  // has one per socket. The first stream logs what it got, once.
  // tcp.pacing is decided by tcp_pacing below, whatever it says here.
  TcpTuning tcp;
  // TCP's own pacing on the streams (REDUCER_TCP_PACING). Unset: on when
  // each reducer hears at least 16 streams (transport_plan.h,
  // AutoTcpPacing), said once in the log.
  std::optional<bool> tcp_pacing;
  // Optional. Called on the client's I/O threads (never under the client's
  // lock, so it may call the client); must not block. Every message begins
  // with "rank N: ". Whatever it throws is
  // caught (the message then goes to stderr).
  LogFn log;
};

// What a client has been through, for logs and benchmarks.
struct ClientStats {
  uint32_t epoch = 0;               // membership epoch (0: no failover has happened)
  size_t live_reducers = 0;
  uint64_t epochs_installed = 0;    // failovers and rejoins
  uint64_t operations_redone = 0;   // sent again in a new epoch
  size_t retained_bytes = 0;        // copies kept for failover now
  size_t retained_peak_bytes = 0;
  uint64_t retention_waits = 0;     // operations that waited for retention memory
  // The transport in use (the user's settings or the automatic ones).
  int streams_per_reducer = 0;
  int io_threads = 0;
  size_t piece_bytes = 0;
  size_t min_piece_bytes = 0;       // small operations are cut down to this to reach more reducers
  size_t send_window_min = 0;       // the streams' send windows now (0: no limit)
  size_t send_window_max = 0;
  bool tcp_paced = false;           // pacing asked for the streams (REDUCER_TCP_PACING or automatic)
  // Writes cut below the automatic write slice to an eighth of an
  // operation's share of a stream (small operations over many reducers),
  // summed over the streams.
  uint64_t writes_cut_small = 0;
  // What TCP waited for on the streams' connections, summed over streams, in
  // microseconds (0 on kernels before 4.10): time it had pieces to send, and
  // of that, time it waited for a reducer's receive window or for room in this
  // host's send buffer. A share of either above a few % means a buffer
  // ceiling, not the link, sets the pace (the client then logs a warning
  // naming the setting; docs/guide/tuning.md).
  uint64_t tcp_busy_us = 0;
  uint64_t tcp_rwnd_limited_us = 0;
  uint64_t tcp_sndbuf_limited_us = 0;
  // Pieces of float32 sums sent as float32 because a value did not fit the
  // wire type (ClientOptions::wire_dtype).
  uint64_t wire_fallbacks = 0;
};

// When an operation's steps happened, for timelines (REDUCER_COLLNET_TRACE).
// A default-constructed time point: not yet.
struct OperationTimes {
  std::chrono::steady_clock::time_point started;       // AllReduce was called
  std::chrono::steady_clock::time_point first_result;  // its first result bytes came in
  std::chrono::steady_clock::time_point done;          // Done() became true
};

// One all-reduce in flight. Keep send and recv buffers alive until Done().
class Operation {
 public:
  virtual ~Operation() = default;
  // Non-blocking: true once the operation has finished, successfully or not.
  virtual bool Done() const = 0;
  // Blocks until finished or timeout; returns the result (kTimeout if the
  // wait, not the operation, timed out).
  virtual Status Wait(std::chrono::milliseconds timeout = std::chrono::hours(24)) = 0;
  // The result once Done(); ok before that.
  virtual Status status() const = 0;
  virtual uint64_t seq() const = 0;
  // Thread-safe, like the others; an operation that never started (a failed
  // session's) reports none.
  virtual OperationTimes times() const { return {}; }
};

class Client {
 public:
  static StatusOr<std::unique_ptr<Client>> Create(ClientOptions options);
  virtual ~Client() = default;

  // Starts an all-reduce of count elements from send into recv (which may be
  // the same buffer). Never blocks on the network. A failed session makes
  // every later call fail at once with the session's error.
  virtual std::shared_ptr<Operation> AllReduce(const void* send, void* recv, size_t count,
                                               DataType dtype, ReduceOp op) = 0;

  // The first error that failed the session, or ok.
  virtual Status health() const = 0;
  virtual uint32_t rank() const = 0;
  virtual uint32_t world() const = 0;
  virtual size_t num_reducers() const = 0;
  virtual ClientStats stats() const = 0;
};

}  // namespace rs::client
