// A test fixture that starts reducerd processes on 127.0.0.1 (port 0) and
// gives their endpoints: the base of the integration tests that run real
// reducers and clients in one process (failover, wire types, ...).
//
// Thread-safety: a fixture, used from the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_cluster.h"

namespace rs::testing {

class ReducerFleetTest : public ::testing::Test {
 public:  // also for the helpers beside the tests that take the fixture
  // Starts `n` reducers with a 60 s operation timeout; fails the test (with
  // the reducer's log) if one does not start.
  void Start(int n) {
    for (int i = 0; i < n; ++i) {
      reducers_.push_back(std::make_unique<ReducerProcess>(std::vector<std::string>{"--op-timeout", "60s"}));
      ASSERT_TRUE(reducers_.back()->ok()) << reducers_.back()->Log();
    }
  }
  std::vector<client::Endpoint> Endpoints() const {
    std::vector<client::Endpoint> out;
    for (const auto& r : reducers_) out.push_back(r->endpoint());
    return out;
  }
  std::vector<std::unique_ptr<ReducerProcess>> reducers_;
};

}  // namespace rs::testing
