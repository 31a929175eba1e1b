#include "server/reducerd_settings.h"

#include <string>

#include "common/tcp_tuning.h"
#include "server/core/server_defaults.h"

namespace rs::server {

const std::vector<SettingInfo>& ReducerdSettings() {
  static const std::vector<SettingInfo> kSettings = {
      Entry(setting::kListen, "HOST:PORT", "0.0.0.0:7450", "",
            "data-plane address; port 0 picks a free one and prints it"),
      Entry(setting::kClusterSpec, "", "", "",
            "Vertex AI's cluster JSON (Vertex sets it). In `workerpool2` the reducer listens on `0.0.0.0` and the "
            "port of its own entry (`task.type`, `task.index`), so the container needs no arguments; `--listen` and "
            "`REDUCER_LISTEN` still win"),
      Entry(setting::kIoThreads, "N", "", "auto: the link's speed and the cores",
            "I/O threads (1 to 256); each owns its connections and reduces the pieces they complete. Unset: one per "
            "1.5 GB/s of the link (the interface holding the listen address; for 0.0.0.0 the fastest one), at most "
            "half the usable cores (affinity and cgroup quota); half the cores, at most 8, where the link reports no "
            "speed. The choice and why are logged at start",
            {{"--threads", ""}}, {{"REDUCER_THREADS", ""}}),
      Entry(setting::kMemoryLimit, "SIZE", kDefaultMemoryLimit.text, "",
            "memory for piece buffers; when used up the reducer stops reading sockets (TCP pushes back)"),
      Entry(setting::kMaxPiece, "SIZE", kDefaultMaxPiece.text, "",
            "largest piece a worker may send, at least 4KiB (also capped so one piece per rank fits the memory limit)"),
      Entry(setting::kJobTokenFile, "FILE", "", "",
            "the job's shared secret (blanks around it ignored). Without a token any worker is accepted (a warning "
            "says so), and a worker that has a token refuses this reducer"),
      Entry(setting::kJobToken, "", "", "", "the token itself, used when no token file is given; never logged"),
      Entry(
          setting::kOpTimeout, "DUR", kDefaultOpTimeout.text, "",
          "an operation still missing contributions after this long fails on every rank, naming the missing ranks; so "
          "does a rank that takes none of its results for this long (it stopped reading)"),
      Entry(setting::kJoinTimeout, "DUR", kDefaultJoinTimeout.text, "",
            "a session whose ranks have not all joined after this long fails, naming the missing ranks"),
      Entry(
          setting::kHandshakeTimeout, "DUR", kDefaultHandshakeTimeout.text, "",
          "a connection that has not finished its handshake (HELLO, AUTH) after this long is sent an error and closed"),
      Entry(setting::kIdleTimeout, "DUR", kDefaultIdleTimeout.text, "",
            "a joined worker that turned its liveness off (`REDUCER_LIVENESS_TIMEOUT=0`) and sends nothing for this "
            "long fails its session, so that idle streams cannot hold connections for ever; workers with liveness on "
            "send heartbeats and are never idle"),
      Entry(setting::kMaxConnections, "N", std::to_string(kDefaultMaxConnections), "",
            "open connections in all; more are refused at once. Also the largest session served (ranks x streams per "
            "rank); reducerd raises its descriptor limit (`ulimit -n`) to fit, or lowers this with a warning"),
      Entry(setting::kMaxConnectionsPerSource, "N", std::to_string(kDefaultMaxConnectionsPerSource), "",
            "open connections from one source: an IPv4 address, or an IPv6 /64 prefix (all ranks behind one NAT "
            "address count as one source)"),
      Entry(setting::kMaxHandshakesPerSource, "N", std::to_string(kDefaultMaxHandshakesPerSource), "",
            "connections from one source (IPv4 address, IPv6 /64) still in the handshake (a job's ranks all connect "
            "at once: keep this above the streams one address opens)"),
      Entry(setting::kMaxPendingSessions, "N", std::to_string(kDefaultMaxPendingSessions), "",
            "sessions waiting for their ranks to join; a worker that would open one more is refused"),
      Entry(setting::kMaxPendingSessionsPerSource, "N", std::to_string(kDefaultMaxPendingSessionsPerSource), "",
            "such sessions opened from one source (IPv4 address, IPv6 /64)"),
      Entry(setting::kCrc, "0/1", kDefaultCrc.text, "",
            "1: check the CRC32C workers send with each piece (when their own check is on) and send one with each "
            "result; a mismatch fails the session naming the hop. 0: neither, whatever the workers ask"),
      Entry(setting::kTls, "0/1", "0", "",
            "1: TLS 1.3 on every worker connection, keyed by the job token (which it needs; no certificates); "
            "workers without REDUCER_TLS=1 are refused, naming it. For networks that are not private. 0: plain TCP"),
      Entry(setting::kResultPart, "SIZE", "", "auto: 64KiB / ranks, 8KiB-32KiB",
            "send a piece's result in parts of at least this size, each as soon as every rank's share of it has "
            "arrived, instead of after the whole piece (cut-through: on a link slower than the reducer, a piece's "
            "result goes out while the rest arrives). Unset: each session's own, 64 KiB / its ranks (32 KiB up to "
            "2 ranks, 16 KiB at 4, 8 KiB from 8), since a piece's first part waits for every rank's share and its "
            "last goes to every rank, each ranks x part on the reducer's link. 0: whole pieces"),
      Entry(setting::kWholePiecesFrom, "N", std::to_string(kDefaultWholePiecesFrom), "",
            "operations cut into at least N pieces per worker get whole pieces all the same, while every worker's "
            "round trip is at most 2 ms: fewer frames and wake-ups (about an eighth less reducerd CPU per GB "
            "measured), and the operation ends at most about 1/N of its time later (one piece from every worker on "
            "the reducer's link). 0: parts for every operation"),
      Entry(setting::kTcpCongestion, "NAME", kDefaultTcpCongestion.text, "",
            "TCP congestion control of the connections to workers: `auto` replaces a host default of bbr with cubic "
            "(reno where cubic is not allowed), since bbr's pacing held pieces back; `system` keeps the host's; or an "
            "algorithm's name. Logged at start-up"),
      Entry(setting::kTcpRtoMin, "DUR", kDefaultTcpRtoMin.text, "",
            "floor of TCP's retransmission timeout on those connections (kernels with TCP_RTO_MIN_US, recent Linux; "
            "the kernel rounds it up "
            "to its timer tick): a lost segment at the end of a piece costs this instead of 200 ms. Raised to twice a "
            "longer path's round trip (at most 200 ms), so that the pause between operations does not restart TCP's "
            "window. 0: the kernel's"),
      Entry(setting::kDrainTimeout, "DUR", kDefaultDrainTimeout.text, "",
            "how long running sessions may go on after SIGTERM (0: fail them at once)"),
      Entry(setting::kLogLevel, "L", kDefaultLogLevel.text, "",
            "`trace`, `debug`, `info`, `warn`, `error`; one line per session start and end and per error, nothing per "
            "piece above `debug`",
            {}, {}, kReadmeTable | kControlPlaneTable),
      Entry(setting::kLogFormat, "F", kDefaultLogFormat.text, "", "`text`, or `json`: one JSON object per line", {}, {},
            kControlPlaneTable),
      Entry(setting::kPortFile, "FILE", "", "", "write the listening port here once listening"),
      Entry(setting::kGrpcListen, "HOST:PORT", "", "off",
            "gRPC control plane and health; port 0 picks a free port and prints it", {}, {}, kControlPlaneTable),
      Entry(setting::kGrpcPortFile, "FILE", "", "", "write the gRPC port here", {}, {}, kControlPlaneTable),
      Entry(setting::kGrpcTlsCert, "FILE", "", "",
            "PEM certificate chain the gRPC port presents (TLS), with `--grpc-tls-key`. Without `--grpc-tls-client-ca` "
            "any client may still call it (a warning says so)",
            {}, {}, kControlPlaneTable),
      Entry(setting::kGrpcTlsKey, "FILE", "", "", "PEM private key of `--grpc-tls-cert`, not encrypted", {}, {},
            kControlPlaneTable),
      Entry(setting::kGrpcTlsClientCa, "FILE", "", "",
            "PEM CA bundle: mutual TLS, only clients presenting a certificate it signed may call the gRPC port. Needs "
            "`--grpc-tls-cert` and `--grpc-tls-key`",
            {}, {}, kControlPlaneTable),
      Entry(setting::kMetricsListen, "HOST:PORT", "", "off",
            "Prometheus metrics at `http://HOST:PORT/metrics`; port 0 picks a free port", {}, {}, kControlPlaneTable),
      Entry(setting::kMetricsPortFile, "FILE", "", "", "write the metrics port here", {}, {}, kControlPlaneTable),
      Entry(setting::kMetricsMaxSessions, "N", std::to_string(kDefaultMetricsMaxSessions), "",
            "sessions with per-session series (live ones first, then the most recently ended), 0 to 1024", {}, {},
            kControlPlaneTable),
      Entry(setting::kMetricsMaxRanks, "N", std::to_string(kDefaultMetricsMaxRanks), "",
            "ranks per session in `reducer_straggler_last_arrivals_total` (those most often last), 0 to 1024", {}, {},
            kControlPlaneTable),
      Entry(setting::kMetricsSessionIds, "0/1", "0", "",
            "1: the `session` label of per-session series is the session's id (`reducerctl sessions` shows the same). "
            "0: an opaque label, `h` and 12 hex digits, stable while reducerd runs: whoever can read the metrics "
            "then cannot name a session in a HELLO",
            {}, {}, kControlPlaneTable),
  };
  return kSettings;
}

}  // namespace rs::server
