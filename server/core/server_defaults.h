// reducerd's defaults, each written once. The settings registry
// (server/reducerd_settings.cc) shows them in --help and in
// docs/reference/settings.md, and reducerd fills its structs from it; the
// structs (ServerConfig, SessionLimits, AdmissionLimits, ControlConfig)
// start from the same values, so that code and tests that build one by hand
// get what reducerd gets (a test that wants a feature off sets 0 itself).
//
// A size or a duration is kept beside the text the registry shows for it
// ("4MiB", "60s"), which reducerd parses; tests/server/options_test.cc
// checks that what it gets is what the structs start from. Counts go into
// the registry through std::to_string.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "common/default_value.h"

namespace rs::server {

inline constexpr Default<uint64_t> kDefaultMemoryLimit{uint64_t{1} << 30, "1GiB"};
inline constexpr Default<uint64_t> kDefaultMaxPiece{uint64_t{4} << 20, "4MiB"};
// The smallest piece reducerd takes: --max-piece's floor, and the least a
// session's pieces may be once the memory limit is shared among its ranks'
// slots (below it the reducer refuses the session).
inline constexpr uint64_t kMinPieceBytes = 4096;
// A piece's result goes out in parts of at least this much (--result-part),
// each once every rank's share of it is in. Unset, the part follows the
// session's ranks: a piece's first part waits for every rank's share of it,
// and its last goes to every rank after the piece's last byte is in, each
// ranks x part on the reducer's link. So ranks x part stays at
// kResultPartShare, in whole 4 KiB pages, from kMaxAutoResultPart (up to 2
// ranks) down to kMinAutoResultPart (from 8), below which the frames and
// wake-ups of more parts cost more than they save. 64 KiB since the ranks
// write an operation's share in slices of an eighth of it: at 4 and 8 ranks
// half the part of 128 KiB / ranks took 6 - 12 % off a 1 MiB all-reduce at
// 100 - 200 Mbit/s (docs/performance.md, "Smaller result parts").
inline constexpr uint64_t kResultPartShare = uint64_t{64} << 10;
inline constexpr uint64_t kMinAutoResultPart = uint64_t{8} << 10;
inline constexpr uint64_t kMaxAutoResultPart = uint64_t{32} << 10;
constexpr uint64_t AutoResultPartBytes(uint32_t world) {
  constexpr uint64_t kPage = 4096;
  const uint64_t per_rank = kResultPartShare / std::max<uint32_t>(world, 1) / kPage * kPage;
  return std::clamp(per_rank, kMinAutoResultPart, kMaxAutoResultPart);
}
inline constexpr uint32_t kDefaultWholePiecesFrom = 64;
inline constexpr Default<bool> kDefaultCrc{true, "1"};
inline constexpr Default<const char*> kDefaultLogLevel{"info", "info"};
inline constexpr Default<const char*> kDefaultLogFormat{"text", "text"};

inline constexpr Default<std::chrono::milliseconds> kDefaultOpTimeout{std::chrono::seconds(60), "60s"};
inline constexpr Default<std::chrono::milliseconds> kDefaultJoinTimeout{std::chrono::seconds(300), "300s"};
inline constexpr Default<std::chrono::milliseconds> kDefaultHandshakeTimeout{std::chrono::seconds(10), "10s"};
inline constexpr Default<std::chrono::milliseconds> kDefaultIdleTimeout{std::chrono::minutes(15), "15m"};
inline constexpr Default<std::chrono::milliseconds> kDefaultDrainTimeout{std::chrono::seconds(30), "30s"};

// Admission (admission.h).
inline constexpr size_t kDefaultMaxConnections = 4096;
inline constexpr size_t kDefaultMaxConnectionsPerSource = 2048;
inline constexpr size_t kDefaultMaxHandshakesPerSource = 256;
inline constexpr size_t kDefaultMaxPendingSessions = 64;
inline constexpr size_t kDefaultMaxPendingSessionsPerSource = 16;

// The metrics' cardinality bounds (server/control/control_config.h).
inline constexpr size_t kDefaultMetricsMaxSessions = 16;
inline constexpr size_t kDefaultMetricsMaxRanks = 8;

}  // namespace rs::server
