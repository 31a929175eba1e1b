// The client's defaults and bounds, each written once: ClientOptions
// (client.h) starts from them, the shared settings list
// (client_settings.cc) shows and enforces them for every front end
// (reducer-bench, rs-train, the NCCL plugin, the Python package), and
// Client::Create checks options built by hand against the same bounds.
//
// Each is kept beside the text the settings list shows for it ("64KiB",
// "90s", "off"), which the front ends parse; a test
// (tests/client/client_settings_test.cc, UnsetSettingsKeepTheClientsDefaults)
// checks that the parsed values are what ClientOptions starts from.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "common/default_value.h"
#include "common/dtype.h"

namespace rs::client {

inline constexpr Default<uint64_t> kDefaultRetention{uint64_t{256} << 20, "256MiB"};
inline constexpr Default<std::chrono::milliseconds> kDefaultConnectTimeout{std::chrono::seconds(60), "60s"};
inline constexpr Default<std::chrono::milliseconds> kDefaultOpTimeout{std::chrono::seconds(90), "90s"};
inline constexpr Default<std::chrono::milliseconds> kDefaultLivenessTimeout{std::chrono::seconds(5), "5s"};
inline constexpr Default<bool> kDefaultTls{false, "0"};
inline constexpr Default<bool> kDefaultCrc{false, "0"};
inline constexpr Default<DataType> kDefaultWireDtype{DataType::kFloat32, "off"};
inline constexpr Default<bool> kDefaultFailover{true, "1"};
inline constexpr Default<uint32_t> kDefaultMinReducers{1, "1"};

// The smallest piece a rank may ask for (REDUCER_MAX_PIECE), and the
// longest of any timeout.
inline constexpr uint64_t kMinMaxPieceBytes = 4096;
inline constexpr std::chrono::milliseconds kMaxTimeout = std::chrono::hours(24);

}  // namespace rs::client
