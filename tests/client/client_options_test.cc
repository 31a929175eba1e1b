// Client::Create refuses options that cannot work, at once and without
// touching the network, with a message that says what to change.
#include <gtest/gtest.h>

#include "client/client.h"
#include "protocol/wire.h"

namespace rs::client {
namespace {

ClientOptions Valid() {
  ClientOptions o;
  o.reducers = {{"127.0.0.1", 1}};
  o.rank = 0;
  o.world = 2;
  return o;
}

void ExpectRefused(const ClientOptions& o, const std::string& expect) {
  StatusOr<std::unique_ptr<Client>> client = Client::Create(o);
  ASSERT_FALSE(client.ok()) << expect;
  EXPECT_EQ(client.status().code(), Code::kInvalidArgument) << client.status().ToString();
  EXPECT_NE(client.status().message().find(expect), std::string::npos) << client.status().message();
}

TEST(ClientOptions, NoReducers) {
  ClientOptions o = Valid();
  o.reducers.clear();
  ExpectRefused(o, "no reducers given");
}

TEST(ClientOptions, RankOutsideTheWorld) {
  ClientOptions o = Valid();
  o.rank = 2;
  ExpectRefused(o, "rank 2 is not below world size 2");
  o.rank = 0;
  o.world = 0;
  ExpectRefused(o, "is not below world size 0");
}

TEST(ClientOptions, WorldLargerThanTheProtocolAllows) {
  ClientOptions o = Valid();
  o.world = protocol::kMaxWorld + 1;
  ExpectRefused(o, "exceeds the protocol's " + std::to_string(protocol::kMaxWorld));
}

TEST(ClientOptions, StreamsPerReducer) {
  ClientOptions o = Valid();
  o.streams_per_reducer = 0;
  ExpectRefused(o, "streams per reducer must be 1 to 64");
  o.streams_per_reducer = protocol::kMaxStreams + 1;
  ExpectRefused(o, "streams per reducer must be 1 to 64");
}

TEST(ClientOptions, PieceSmallerThan4KiB) {
  ClientOptions o = Valid();
  o.max_piece_bytes = 4095;
  ExpectRefused(o, "piece size must be at least 4 KiB");
}

}  // namespace
}  // namespace rs::client
