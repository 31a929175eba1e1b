#include "client/client_settings.h"

#include <cctype>
#include <cstdlib>

#include "common/tcp_tuning.h"
#include "protocol/wire.h"

namespace rs::client {
namespace {

using std::chrono::milliseconds;
using namespace setting;  // NOLINT: the keys, read here by their short names
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;

// "--liveness-timeout 50ms" or "REDUCER_LIVENESS_TIMEOUT='50ms'", for
// messages about a value that parsed but does not fit.
std::string Show(const SettingValue& v) {
  return v.source.rfind("--", 0) == 0 ? v.source + " " + v.text : v.source + "='" + v.text + "'";
}

template <typename T, typename U>
Status Assign(StatusOr<U> value, T* dest) {
  if (!value.ok()) return value.status();
  *dest = static_cast<T>(*value);
  return Status::Ok();
}

// Settings the client chooses when unset (transport_plan.h): only a value
// given stands.
template <typename T>
Status SizeIfSet(const Settings& s, const SettingKey<uint64_t>& key, uint64_t min, uint64_t max,
                 std::optional<T>* dest) {
  if (!s.IsSet(key)) return Status::Ok();
  return Assign(s.Size(key, min, max), &dest->emplace());
}

Status Streams(const Settings& s, ClientOptions* o) {
  if (!s.IsSet(kStreams)) return Status::Ok();
  return Assign(s.Int(kStreams, 1, protocol::kMaxStreams), &o->streams_per_reducer.emplace());
}
Status MaxPiece(const Settings& s, ClientOptions* o) {
  return SizeIfSet(s, kMaxPiece, kMinMaxPieceBytes, kGiB, &o->max_piece_bytes);
}
Status MinPiece(const Settings& s, ClientOptions* o) {
  return SizeIfSet(s, kMinPiece, 1, kGiB, &o->min_piece_bytes);
}
Status SendWindow(const Settings& s, ClientOptions* o) {
  return SizeIfSet(s, kSendWindow, 0, kTiB, &o->send_window_bytes);
}
Status WriteSlice(const Settings& s, ClientOptions* o) {
  return SizeIfSet(s, kWriteSlice, 0, kTiB, &o->write_slice_bytes);
}
Status IoThreads(const Settings& s, ClientOptions* o) {
  if (!s.IsSet(kIoThreads)) return Status::Ok();
  return Assign(s.Int(kIoThreads, 1, 64), &o->io_threads.emplace());
}
Status OpTimeout(const Settings& s, ClientOptions* o) {
  return Assign(s.Duration(kOpTimeout, milliseconds(1), kMaxTimeout), &o->op_timeout);
}
Status ConnectTimeout(const Settings& s, ClientOptions* o) {
  return Assign(s.Duration(kConnectTimeout, milliseconds(1), kMaxTimeout), &o->connect_timeout);
}
Status Liveness(const Settings& s, ClientOptions* o) {
  RS_RETURN_IF_ERROR(Assign(s.Duration(kLivenessTimeout, milliseconds(0), kMaxTimeout), &o->liveness_timeout));
  if (o->liveness_timeout.count() != 0 && o->liveness_timeout < kMinLivenessTimeout) {
    return Status(Code::kInvalidArgument, Show(s.Get(kLivenessTimeout)) + ": use 0 (off) or at least 100ms");
  }
  return Status::Ok();
}
Status Crc(const Settings& s, ClientOptions* o) {
  return Assign(s.Int(kCrc, 0, 1), &o->crc);
}
Status Tls(const Settings& s, ClientOptions* o) {
  return Assign(s.Int(kTls, 0, 1), &o->tls);
}
Status WireDtype(const Settings& s, ClientOptions* o) {
  const SettingValue& v = s.Get(kWireDtype);
  const std::optional<DataType> wire = protocol::ParseWireType(v.text);
  if (!wire) return Status(Code::kInvalidArgument, Show(v) + " is not one of off, bfloat16, float16");
  o->wire_dtype = *wire;
  return Status::Ok();
}
Status Failover(const Settings& s, ClientOptions* o) {
  return Assign(s.Int(kFailover, 0, 1), &o->failover);
}
// Checked against the reducers in ApplyClientSettings, which knows where
// they came from.
Status MinReducers(const Settings& s, ClientOptions* o) {
  return Assign(s.Int(kMinReducers, 1, protocol::kMaxWorld), &o->min_reducers);
}
Status TcpCongestion(const Settings& s, ClientOptions* o) {
  const SettingValue& v = s.Get(kTcpCongestion);
  RS_RETURN_IF_ERROR(ValidateTcpCongestion(v.source, v.text));
  o->tcp.congestion = v.text;
  return Status::Ok();
}
Status TcpRtoMin(const Settings& s, ClientOptions* o) {
  return Assign(s.Duration(kTcpRtoMin, milliseconds(0), milliseconds(200)), &o->tcp.rto_min);
}
Status TcpPacing(const Settings& s, ClientOptions* o) {
  const SettingValue& v = s.Get(kTcpPacing);
  if (v.text == "auto") {
    o->tcp_pacing.reset();
  } else if (v.text == "1" || v.text == "0") {
    o->tcp_pacing = v.text == "1";
  } else {
    return Status(Code::kInvalidArgument, Show(v) + " is not one of auto, 1, 0");
  }
  return Status::Ok();
}
Status Retention(const Settings& s, ClientOptions* o) {
  return Assign(s.Size(kRetention, uint64_t{1} << 20, kTiB), &o->retention_bytes);
}

}  // namespace

const std::vector<ClientSetting>& ClientSettings() {
  static const std::vector<ClientSetting> kSettings = {
      {Entry(kStreams, "N", "", "auto: 1", "TCP streams to each reducer (1-64); the same on every rank"), Streams},
      {Entry(kMaxPiece, "SIZE", "", "auto: 512KiB / reducers, 64KiB-512KiB",
             "Largest piece of an all-reduce sent to one reducer (4KiB-1GiB); the same on every rank",
             {{"--piece-bytes", ""}}, {{"REDUCER_PIECE_BYTES", ""}}),
       MaxPiece},
      {Entry(kMinPiece, "SIZE", "", "auto: 256KiB / ranks, 4KiB-64KiB",
             "Below this an all-reduce is not split further to reach every reducer; the same on every rank. "
             "Unset: 256KiB / ranks (whole 4KiB pages, 4KiB to 64KiB), so that each reducer's share of a piece "
             "from every rank stays at 256KiB and small all-reduces of many ranks reach many reducers",
             {},
             {{"REDUCER_MIN_PIECE_BYTES", ""}}),
       MinPiece},
      {Entry(kSendWindow, "SIZE", "", "auto: 4 pieces or 2 pieces + 2 x BDP",
             "Bytes of pieces a stream may have sent without their results back; 0: no limit. Unset: 4 pieces, "
             "or 2 pieces + twice the stream's bandwidth-delay product as TCP measures it, whichever is more"),
       SendWindow},
      {Entry(kWriteSlice, "SIZE", "", "auto: 0.5 ms of the path, at least 64KiB; small shares finer",
             "With streams to several reducers, bytes of pieces a stream writes at a time, so that they take turns "
             "on this rank's link; 0: whole batches. Unset: half a millisecond of the stream's typical delivery "
             "rate as TCP measures it, at least 64KiB; an operation's writes at most an eighth of its share of the "
             "stream, down to half a millisecond of this rank's link (at least 8KiB)"),
       WriteSlice},
      {Entry(kIoThreads, "N", "", "auto: the link's speed and the cores",
             "Client I/O threads (1-64). Unset: one per 1.5 GB/s of the link the route to the first reducer leaves "
             "by, at most half the usable cores (affinity and cgroup quota), at most one per stream; 8 at most where "
             "the link reports no speed. The choice and why are logged once"),
       IoThreads},
      {Entry(kOpTimeout, "DUR", kDefaultOpTimeout.text, "",
             "An all-reduce with no answer from a reducer for this long fails; keep it above the reducers' "
             "`--op-timeout` so their error, which names the missing ranks, arrives first",
             {}, {{"REDUCER_OP_TIMEOUT_MS", "ms"}}),
       OpTimeout},
      {Entry(kConnectTimeout, "DUR", kDefaultConnectTimeout.text, "",
             "Bound on joining the reducers: connecting, and every rank joining the session. A reducer that refuses "
             "the connection or cannot be routed to is tried for a third of it (the start-up grace), then the join "
             "fails naming it; the first failure is logged at once",
             {}, {{"REDUCER_CONNECT_TIMEOUT_MS", "ms"}}),
       ConnectTimeout},
      {Entry(kLivenessTimeout, "DUR", kDefaultLivenessTimeout.text, "",
             "A reducer that sends nothing for this long (frozen, host down, link cut) is lost (see "
             "`REDUCER_FAILOVER`); heartbeats go both ways at a fifth of it, and the reducers use it to detect a "
             "silent rank. At least 100ms; 0: off"),
       Liveness},
      {Entry(kCrc, "0/1", kDefaultCrc.text, "",
             "1: CRC32C over every piece and result, checked end to end (with the reducers' `--crc`); a mismatch "
             "fails the all-reduce naming the hop, and the reducers spend 3-10 % more CPU. 0: off"),
       Crc},
      {Entry(kTls, "0/1", kDefaultTls.text, "",
             "1: TLS 1.3 to every reducer (with the reducers' `--tls`), keyed by the job token, which it needs; a "
             "reducer without TLS is refused, never used in the clear. For networks that are not private. 0: plain "
             "TCP"),
       Tls},
      {Entry(kWireDtype, "TYPE", kDefaultWireDtype.text, "",
             "`bfloat16` or `float16`: float32 sums travel in that type (half the bytes), rounded once by each rank "
             "and once by the reducers after their float32 sum, so results stay identical on every rank; a piece "
             "with a value the type cannot hold (Inf, NaN, beyond float16's 65504) goes as float32. Other types "
             "and ops are unchanged. `off`: float32. The same on every rank"),
       WireDtype},
      {Entry(kFailover, "0/1", kDefaultFailover.text, "",
             "1: a lost reducer is survived (the others take over its share, results bit for bit unchanged; a "
             "restarted one is taken back), each rank keeping a copy of its recent inputs for it. 0: losing a "
             "reducer fails the job. The same on every rank"),
       Failover},
      {Entry(kMinReducers, "N", kDefaultMinReducers.text, "",
             "With failover, the job fails when fewer reducers than this are left"),
       MinReducers},
      {Entry(kRetention, "SIZE", kDefaultRetention.text, "",
             "With failover, memory for the copies of inputs not yet completed on every rank (at least 1MiB); "
             "when full, new all-reduces wait for the slowest rank"),
       Retention},
      {Entry(kTcpCongestion, "NAME", kDefaultTcpCongestion.text, "",
             "TCP congestion control of the streams to the reducers: `auto` replaces a host default of bbr with "
             "cubic (reno where cubic is not allowed), since bbr's pacing held pieces back; `system` keeps the "
             "host's; or an algorithm's name. Logged once"),
       TcpCongestion},
      {Entry(kTcpRtoMin, "DUR", kDefaultTcpRtoMin.text, "",
             "Floor of TCP's retransmission timeout on those streams (kernels with TCP_RTO_MIN_US, recent Linux; "
             "rounded up to the "
             "kernel's timer tick): a segment lost at the end of a piece costs this instead of 200 ms. Raised to twice "
             "a longer path's round trip (at most 200 ms), so that the pause between operations does not restart "
             "TCP's window. 0: the kernel's"),
       TcpRtoMin},
      {Entry(kTcpPacing, "auto/0/1", "auto", "auto: on from 16 streams per reducer",
             "TCP's own pacing on those streams: each congestion window spread over the round trip instead of sent "
             "as one burst, so that many ranks' bursts do not overflow the switch's port towards a reducer at once "
             "(incast). auto: on when each reducer hears at least 16 streams (world x streams per reducer). Logged "
             "once"),
       TcpPacing},
  };
  return kSettings;
}

std::vector<SettingInfo> ClientSettingInfos(std::string_view doc_prefix) {
  std::vector<SettingInfo> out;
  for (const ClientSetting& setting : ClientSettings()) {
    std::string doc = setting.info.doc;
    // "CPU backend: bytes of ...", but "CPU backend: TCP streams ...".
    if (!doc_prefix.empty() && doc.size() > 1 && std::isupper(static_cast<unsigned char>(doc[0])) &&
        !std::isupper(static_cast<unsigned char>(doc[1]))) {
      doc[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(doc[0])));
    }
    out.push_back(setting.info);
    out.back().doc = std::string(doc_prefix) + doc;
  }
  return out;
}

namespace {

// The shared setting named by `key`; aborts when it is not one (a
// programming error).
const ClientSetting& SettingOf(const SettingName& key) {
  for (const ClientSetting& setting : ClientSettings()) {
    if (setting.info.env == key.env) return setting;
  }
  std::abort();
}

}  // namespace

const SettingInfo& ClientSettingInfo(const SettingName& key) { return SettingOf(key).info; }

Status ApplyClientSetting(const Settings& s, const SettingName& key, ClientOptions* o) {
  return SettingOf(key).apply(s, o);
}

Status ApplyClientSettings(const Settings& s, ClientOptions* o, std::string_view reducers_source) {
  for (const ClientSetting& setting : ClientSettings()) RS_RETURN_IF_ERROR(setting.apply(s, o));
  if (!o->reducers.empty() && o->min_reducers > o->reducers.size()) {
    return Status(Code::kInvalidArgument, Show(s.Get(kMinReducers)) + " is more than the " +
                                              std::to_string(o->reducers.size()) + " reducers" +
                                              (reducers_source.empty() ? "" : " of " + std::string(reducers_source)));
  }
  return Status::Ok();
}

}  // namespace rs::client
