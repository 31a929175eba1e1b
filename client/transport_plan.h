// The client's transport settings when the user leaves them unset: streams
// per reducer, piece size and send window, chosen by one small rule from what
// the client knows (the reducer count) and what it measures on each stream
// (the kernel's minimum round-trip time and delivery rate, TCP_INFO). A
// setting the user gave always wins. docs/performance.md ("Defaults that
// adapt") explains the rule and the measurements behind it.
//
// Streams and piece size must be the same on every rank (the reducers check
// the first, the partition needs the second), so they depend only on inputs
// every rank shares: the reducer list and the settings. The send window is a
// rank's own affair (it only paces this rank's writes), so it follows each
// stream's measured path, all the time.
//
// Pure functions and a value type: no I/O, no clock of their own. SendWindow
// is not thread-safe: one per stream, used on the stream's I/O thread.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace rs::client {

// One TCP stream per reducer: with a window and socket buffers that cover
// the bandwidth-delay product it fills its share of the link, and more
// streams only add flows that compete in the same queues (measured slower).
int AutoStreams(uint32_t reducers);

// About 512 KiB per round of pieces across all reducers (512 KiB / R, whole
// 4 KiB pages, 64 KiB to 512 KiB): fill and drain of a large operation cost
// about 2 R P / B, a fixed 1 MiB of link time whatever R is, and medium
// operations still get several pieces per reducer.
size_t AutoPieceBytes(uint32_t reducers);

// The smallest piece an operation is cut into to reach more reducers
// (REDUCER_MIN_PIECE unset): 256 KiB / world, whole 4 KiB pages, 4 KiB to
// 64 KiB. A reducer takes in one piece from every rank, so a piece of P costs
// its link W x P while the rank's link carries only P: with 64 KiB pieces a
// 256 KiB operation of 16 ranks went to 4 reducers of 16, each taking in
// 1 MiB, and took 4 x its time spread over all 16 (docs/performance.md,
// "Small operations on many ranks"). The floor keeps each reducer's share
// of a piece (W x P) at 256 KiB, what 4 ranks always had; where the links
// are not the bound (one host's loopback) smaller pieces only cost system
// calls and wake-ups. Depends only on the world size, which every rank
// shares, as the partition must.
inline constexpr size_t kReducerShareFloor = 256 << 10;
inline constexpr size_t kMaxAutoMinPiece = 64 << 10;  // 4 ranks or fewer, and every job before
size_t AutoMinPieceBytes(uint32_t world);

// What the kernel measured on one stream (0: not known yet).
struct PathSample {
  std::chrono::microseconds min_rtt{0};  // tcpi_min_rtt
  uint64_t delivery_bytes_per_second = 0;  // tcpi_delivery_rate
};

// The send window of one stream: at least 4 pieces (keeps a rank's streams in
// step; below it the flows that run ahead take link share from the ones the
// reducers wait for), and 2 pieces + twice the stream's bandwidth-delay
// product where that is more (a long round trip must not idle the stream:
// a piece's answer needs the piece, the other ranks' copies and the result
// to cross). At most kMaxAutoWindow.
inline constexpr size_t kMaxAutoWindow = 64 << 20;
size_t AutoSendWindow(size_t piece_bytes, uint64_t bandwidth_bytes_per_second, std::chrono::microseconds rtt);

// How much of its pieces a stream writes at once when the rank has streams
// to several reducers: about half a millisecond of the stream's typical
// delivery rate, at least 64 KiB; 0 (whole batches) while it is not known. A rank's streams then take turns on its link: written a batch at a
// time, each stream's bytes queue behind the others' in the host's egress
// queue, so the reducers get their first bytes one after another and the
// last one starts late (docs/performance.md, "Interleaved writes").
inline constexpr std::chrono::microseconds kWriteSliceTime{500};
inline constexpr size_t kMinWriteSlice = 64 << 10;
size_t AutoWriteSlice(uint64_t bandwidth_bytes_per_second);

// The automatic slice is also at most an eighth of what one operation gives
// each of its streams (OperationSlice), down to half a millisecond of what
// the rank's link carries and at least kMinOperationSlice
// (MinOperationSlice, of the streams' BusyRate). A reducer's first result
// part needs every rank's first bytes, and a rank's first round across its
// R streams is R slices: with 64 KiB slices and 1 MiB over 16 reducers that
// round was the whole operation, so each reducer started answering only
// once all of it was in. An eighth keeps the round to about an eighth of
// the operation, however many reducers share it; the floor keeps each
// write worth its CPU (at 1 Gbit/s slices below it were slower). Such
// writes go out as packets of their own (DataStream::set_end_of_record), or
// the kernel would join a stream's next slices while its first one waits in
// the host's queue (docs/performance.md, "Small slices for small shares").
inline constexpr size_t kOperationSlices = 8;
inline constexpr size_t kMinOperationSlice = 8 << 10;
size_t OperationSlice(uint64_t stream_share_bytes);
size_t MinOperationSlice(uint64_t bandwidth_bytes_per_second);

// How fast a stream's pieces come back answered: each busy period (from a
// write with nothing unanswered to the result that answers the last byte)
// gives its bytes over its time, and the fastest of the last kPeriods is
// the stream's pace. Times the rank's streams it is what the rank's link
// carried, below the link's rate, not above it; the delivery rates TCP
// reports read far below it on these streams one operation at a time
// (1 - 30 MB/s per stream on a 1 Gbit/s link shared by four).
class BusyRate {
 public:
  static constexpr size_t kPeriods = 16;
  using Clock = std::chrono::steady_clock;

  void OnWrite(uint64_t unanswered_before, Clock::time_point now);
  void OnAnswered(uint64_t bytes, uint64_t unanswered_after, Clock::time_point now);
  uint64_t bytes_per_second() const { return fastest_; }  // 0: no period ended yet

 private:
  bool busy_ = false;
  Clock::time_point start_{};
  uint64_t bytes_ = 0;
  std::array<uint64_t, kPeriods> rates_{};  // a ring
  size_t periods_ = 0;                      // all told
  uint64_t fastest_ = 0;
};

// Whether the streams to the reducers are paced (common/tcp_tuning.h) when
// REDUCER_TCP_PACING is unset: when each reducer hears at least
// kPacedFanIn streams (world x streams per reducer). Every rank's window
// then reaches a reducer's switch port spread over the round trip, not as
// bursts from all ranks at once: 16 + 16 hosts on the harness's shallow
// switch queues took 0.71 x the line rate unpaced, 0.80 x paced. With
// fewer streams the bursts overflowed only the shallowest queues, and
// pacing's timers cost a CPU-bound host a few % (docs/performance.md,
// "Sixteen workers: incast").
inline constexpr uint64_t kPacedFanIn = 16;
bool AutoTcpPacing(uint32_t world, int streams_per_reducer);

// The window one stream applies: a fixed one (the user's), or the automatic
// one, updated from path samples (taken either way: the write slice
// follows the bandwidth too). Bandwidth is the largest delivery rate seen
// in the last 1 to 2 s (samples taken while this rank was idle or held back
// by its window read low; the largest one is the path's), the round trip the
// smallest the kernel has seen.
class SendWindow {
 public:
  static constexpr std::chrono::milliseconds kBandwidthPeriod{1000};
  static constexpr std::chrono::milliseconds kSampleInterval{5};

  // explicit_bytes: the user's window (0: no limit), or nullopt: automatic.
  SendWindow(std::optional<size_t> explicit_bytes, size_t piece_bytes);

  size_t bytes() const { return bytes_; }  // 0: no limit
  bool automatic() const { return automatic_; }
  // AutoWriteSlice of the typical delivery rate (the median of the last
  // kTypicalSamples samples: the peaks the window uses read far above the
  // link when bursts pass a shaper's bucket), whether the window is
  // automatic or not.
  size_t write_slice() const { return write_slice_; }
  // Whether a sample is due (at most one per kSampleInterval).
  bool WantSample(std::chrono::steady_clock::time_point now) const;
  void OnSample(const PathSample& sample, std::chrono::steady_clock::time_point now);

 private:
  bool automatic_;
  size_t piece_bytes_;
  size_t bytes_;
  size_t write_slice_ = 0;
  static constexpr size_t kTypicalSamples = 15;
  std::array<uint64_t, kTypicalSamples> recent_{};  // delivery rates, a ring
  size_t recent_count_ = 0;                         // samples taken, all told
  std::chrono::microseconds rtt_{0};
  uint64_t bw_current_ = 0;   // max over the period in progress
  uint64_t bw_previous_ = 0;  // max over the one before
  std::chrono::steady_clock::time_point period_start_{};
  std::chrono::steady_clock::time_point last_sample_{};
  bool sampled_ = false;
};

}  // namespace rs::client
