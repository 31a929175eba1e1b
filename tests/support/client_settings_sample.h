// One value other than the default for every shared client setting
// (client/client_settings.h), as the environment gives them, and the
// ClientOptions they must produce. Each front end's tests set them through
// its own registry and check what reaches the client; the client's own test
// checks that the sample covers the whole list, so a setting added there is
// checked everywhere.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>

#include "client/client.h"

namespace rs::testing {

// Two reducers are needed for REDUCER_MIN_REDUCERS=2; the front ends take
// them from REDUCER_ADDRS.
inline const char* kSampleReducers = "127.0.0.1:7001,127.0.0.1:7002";

inline std::map<std::string, std::string> ClientSettingsSample() {
  return {
      {"REDUCER_STREAMS", "3"},          {"REDUCER_MAX_PIECE", "128KiB"},
      {"REDUCER_MIN_PIECE", "16KiB"},    {"REDUCER_SEND_WINDOW", "1MiB"},
      {"REDUCER_WRITE_SLICE", "256KiB"}, {"REDUCER_IO_THREADS", "2"},
      {"REDUCER_OP_TIMEOUT", "33s"},     {"REDUCER_CONNECT_TIMEOUT", "44s"},
      {"REDUCER_LIVENESS_TIMEOUT", "2s"}, {"REDUCER_CRC", "1"},
      {"REDUCER_TLS", "1"},
      {"REDUCER_WIRE_DTYPE", "bfloat16"}, {"REDUCER_FAILOVER", "0"},
      {"REDUCER_MIN_REDUCERS", "2"},     {"REDUCER_RETENTION", "64MiB"},
      {"REDUCER_TCP_CONGESTION", "reno"}, {"REDUCER_TCP_RTO_MIN", "20ms"},
      {"REDUCER_TCP_PACING", "1"},
  };
}

inline void ExpectClientSettingsSample(const client::ClientOptions& o) {
  EXPECT_EQ(o.streams_per_reducer, 3);
  EXPECT_EQ(o.max_piece_bytes, size_t{128} << 10);
  EXPECT_EQ(o.min_piece_bytes, size_t{16} << 10);
  EXPECT_EQ(o.send_window_bytes, size_t{1} << 20);
  EXPECT_EQ(o.write_slice_bytes, size_t{256} << 10);
  EXPECT_EQ(o.io_threads, 2);
  EXPECT_EQ(o.op_timeout, std::chrono::seconds(33));
  EXPECT_EQ(o.connect_timeout, std::chrono::seconds(44));
  EXPECT_EQ(o.liveness_timeout, std::chrono::seconds(2));
  EXPECT_TRUE(o.crc);
  EXPECT_TRUE(o.tls);
  EXPECT_EQ(o.wire_dtype, DataType::kBfloat16);
  EXPECT_FALSE(o.failover);
  EXPECT_EQ(o.min_reducers, 2u);
  EXPECT_EQ(o.retention_bytes, size_t{64} << 20);
  EXPECT_EQ(o.tcp.congestion, "reno");
  EXPECT_EQ(o.tcp.rto_min, std::chrono::milliseconds(20));
  EXPECT_EQ(o.tcp_pacing, true);
}

}  // namespace rs::testing
