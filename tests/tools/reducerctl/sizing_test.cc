// `reducerctl plan` against the documented sizing examples
// (docs/guide/sizing.md, ../shared/docs/field.md and design.md).
#include "tools/reducerctl/sizing.h"

#include <gtest/gtest.h>

#include "tests/support/plan_input.h"

namespace rs::reducerctl {
namespace {

Plan MustPlan(uint32_t workers, double worker_gbps, double reducer_gbps, uint32_t reducers = 0) {
  auto p = ComputePlan(Inputs(workers, worker_gbps, reducer_gbps, reducers));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : Plan{};
}

// field.md: "5 GPU nodes at 100 Gbps need 16 reducers at 32 Gbps".
TEST(SizingTest, FiveNodesAt100GbpsNeedSixteenReducersAt32Gbps) {
  const Plan p = MustPlan(5, 100, 32);
  EXPECT_EQ(p.recommended_reducers, 16u);
  EXPECT_EQ(p.reducers, 16u);
  EXPECT_DOUBLE_EQ(p.worker_total_gbps, 500);
  EXPECT_DOUBLE_EQ(p.reducer_total_gbps, 512);
  EXPECT_FALSE(p.reducer_bound);
  EXPECT_DOUBLE_EQ(p.algbw_gbps, 100);       // the line rate: 12.5 GB/s
  EXPECT_DOUBLE_EQ(p.ring_algbw_gbps, 62.5);  // 100 * 5 / 8
  EXPECT_DOUBLE_EQ(p.speedup, 1.6);           // 2(n-1)/n
  // One reducer fewer falls short of the workers' total.
  const Plan fewer = MustPlan(5, 100, 32, 15);
  EXPECT_TRUE(fewer.reducer_bound);
  EXPECT_DOUBLE_EQ(fewer.algbw_gbps, 15 * 32 / 5.0);
}

// field.md's 4 ranks on 100 Gbps (Optcast: 5.21 GB/s, "about 42% of line
// rate") and design.md's "1.5x at 4 nodes, 1.75x at 8".
TEST(SizingTest, FourAndEightNodesAt100Gbps) {
  const Plan four = MustPlan(4, 100, 32);
  EXPECT_EQ(four.recommended_reducers, 13u);   // ceil(400 / 32)
  EXPECT_DOUBLE_EQ(four.algbw_gbps / 8, 12.5);  // GB/s: 5.21 GB/s is 42% of it
  EXPECT_NEAR(5.21 / (four.algbw_gbps / 8), 0.42, 0.005);
  EXPECT_DOUBLE_EQ(four.speedup, 1.5);
  EXPECT_DOUBLE_EQ(MustPlan(8, 100, 100).speedup, 1.75);
  EXPECT_EQ(MustPlan(8, 100, 100).recommended_reducers, 8u);
}

TEST(SizingTest, AnExactFitIsNotRoundedUp) {
  EXPECT_EQ(MustPlan(4, 100, 25).recommended_reducers, 16u);
  EXPECT_EQ(MustPlan(3, 0.1, 0.3).recommended_reducers, 1u);
  EXPECT_EQ(MustPlan(2, 10, 100).recommended_reducers, 1u);  // never zero
}

PlanInput WithCores(uint32_t workers, double worker_gbps, double reducer_gbps, double cores, double rate,
                    uint32_t reducers = 0) {
  PlanInput in = Inputs(workers, worker_gbps, reducer_gbps, reducers);
  in.reducer_cores = cores;
  in.gb_per_core_second = rate;
  return in;
}

// The cloud sizing (5 x 100 Gbps -> 16 n1-highcpu-16 at 32 Gbps) is NIC-bound
// at the measured reduction rate: 62.5 GB/s of input needs 29 cores, 2 such
// machines, and 16 are needed for their NICs.
TEST(SizingTest, CloudReducersAreNicBoundAtTheMeasuredRate) {
  auto p = ComputePlan(WithCores(5, 100, 32, 16, kReducerGbPerCoreSecond));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->nic_reducers, 16u);
  EXPECT_EQ(p->cpu_reducers, 2u);
  EXPECT_EQ(p->recommended_reducers, 16u);
  EXPECT_FALSE(p->cpu_bound);
  EXPECT_FALSE(p->reducer_bound);
  EXPECT_DOUBLE_EQ(p->algbw_gbps, 100);
  EXPECT_DOUBLE_EQ(p->reducer_cores_per_worker, 12.5 / kReducerGbPerCoreSecond);
  EXPECT_DOUBLE_EQ(p->reducer_cores_needed, 5 * 12.5 / kReducerGbPerCoreSecond);
  EXPECT_DOUBLE_EQ(p->reducer_cores_total, 16 * 16);
  EXPECT_DOUBLE_EQ(p->worker_cores, 12.5 / kWorkerGbPerCoreSecond);
}

// Small reducer machines: the cores, not the NICs, set the count, and fewer
// reducers than that limit algbw by their CPU.
TEST(SizingTest, FewCoresMakeTheCpuCountWin) {
  auto p = ComputePlan(WithCores(8, 100, 100, 4, 1.8));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->nic_reducers, 8u);
  EXPECT_EQ(p->cpu_reducers, 14u);  // ceil(100 GB/s / 7.2 GB/s per reducer)
  EXPECT_EQ(p->recommended_reducers, 14u);
  EXPECT_FALSE(p->reducer_bound);
  auto eight = ComputePlan(WithCores(8, 100, 100, 4, 1.8, 8));
  ASSERT_TRUE(eight.ok());
  EXPECT_TRUE(eight->cpu_bound);
  EXPECT_TRUE(eight->reducer_bound);
  EXPECT_DOUBLE_EQ(eight->algbw_gbps, 8 * 4 * 1.8 * 8 / 8.0);  // 57.6 Gbps
  EXPECT_DOUBLE_EQ(eight->speedup, eight->algbw_gbps / eight->ring_algbw_gbps);
  // NIC-short and CPU-rich: the NICs are the limit, not the cores.
  auto nic = ComputePlan(WithCores(8, 100, 100, 64, 1.8, 4));
  ASSERT_TRUE(nic.ok());
  EXPECT_FALSE(nic->cpu_bound);
  EXPECT_TRUE(nic->reducer_bound);
  EXPECT_DOUBLE_EQ(nic->algbw_gbps, 50);
}

TEST(SizingTest, CpuCountFitsExactlyAndIsOffWithoutCores) {
  auto exact = ComputePlan(WithCores(4, 80, 400, 10, 2));  // 40 GB/s over 20 cores of 2 GB/s each
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->cpu_reducers, 2u);
  EXPECT_EQ(exact->recommended_reducers, 2u);
  const Plan without = MustPlan(5, 100, 32);
  EXPECT_EQ(without.cpu_reducers, 0u);
  EXPECT_EQ(without.recommended_reducers, without.nic_reducers);
  EXPECT_DOUBLE_EQ(without.reducer_cores_per_worker, 12.5 / kReducerGbPerCoreSecond);  // reported anyway
  EXPECT_FALSE(without.cpu_bound);
}

// Each worker's line rate is spread over its connections, one per reducer:
// 100 Gbps over 16 reducers is 6.25 Gbps a connection, 0.78 MB in flight at
// 1 ms (Linux's default ceilings hold twice that) and 15.6 MB at 20 ms (they
// do not).
TEST(SizingTest, SocketBuffersFollowTheRoundTripPerConnection) {
  PlanInput in = Inputs(5, 100, 32);
  in.rtt_ms = 1;
  auto near = ComputePlan(in);
  ASSERT_TRUE(near.ok());
  EXPECT_DOUBLE_EQ(near->connection_gbps, 6.25);
  EXPECT_DOUBLE_EQ(near->connection_bdp_bytes, 781'250);
  EXPECT_DOUBLE_EQ(near->buffer_ceiling_bytes, 1'562'500);
  EXPECT_TRUE(near->default_buffers_suffice);
  in.rtt_ms = 20;
  auto far = ComputePlan(in);
  ASSERT_TRUE(far.ok());
  EXPECT_DOUBLE_EQ(far->buffer_ceiling_bytes, 31'250'000);
  EXPECT_FALSE(far->default_buffers_suffice);
  // Fewer reducers than recommended: each connection carries what the
  // reducers' NICs allow, spread over fewer connections.
  in.reducers = 8;
  auto fewer = ComputePlan(in);
  ASSERT_TRUE(fewer.ok());
  EXPECT_DOUBLE_EQ(fewer->connection_gbps, fewer->algbw_gbps / 8);
  // Without a round trip nothing is sized.
  EXPECT_EQ(MustPlan(5, 100, 32).buffer_ceiling_bytes, 0);
  EXPECT_TRUE(MustPlan(5, 100, 32).default_buffers_suffice);
}

TEST(SizingTest, BadInputNamesTheFlag) {
  for (auto [input, flag] : {std::pair{WithCores(4, 100, 32, -1, 1.8), "--reducer-cores"},
                             std::pair{WithCores(4, 100, 32, 16, 0), "--gb-per-core-second"}}) {
    auto p = ComputePlan(input);
    ASSERT_FALSE(p.ok()) << flag;
    EXPECT_NE(p.status().message().find(flag), std::string::npos) << p.status().message();
  }
  PlanInput worker_rate = Inputs(4, 100, 32);
  worker_rate.worker_gb_per_core_second = -2;
  EXPECT_NE(ComputePlan(worker_rate).status().message().find("--worker-gb-per-core-second"), std::string::npos);

  auto p = ComputePlan(Inputs(1, 100, 32));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--workers must be at least 2"), std::string::npos);
  p = ComputePlan(Inputs(4, 0, 32));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--worker-gbps"), std::string::npos);
  p = ComputePlan(Inputs(4, 100, -1));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--reducer-gbps"), std::string::npos);
  PlanInput rtt = Inputs(4, 100, 32);
  rtt.rtt_ms = -1;
  EXPECT_NE(ComputePlan(rtt).status().message().find("--rtt"), std::string::npos);
}

// A machine type stands for its NIC and vCPUs, so that the plan can name
// what Vertex AI's pool 2 and the JobSet should run; explicit flags win.
TEST(SizingTest, MachineTypeGivesBandwidthAndCores) {
  PlanInput in = Inputs(4, 100, 0);
  in.reducer_machine = "n1-highcpu-16";
  auto p = ComputePlan(in);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->input.reducer_gbps, 32);
  EXPECT_EQ(p->input.reducer_cores, 16);
  EXPECT_EQ(p->nic_reducers, 13u);  // deploy/vertex/job.yaml's pool 2
  EXPECT_EQ(p->cpu_reducers, 2u);
  EXPECT_EQ(p->recommended_reducers, 13u);
  in.reducer_machine = "n1-highcpu-8";  // 16 Gbps
  EXPECT_EQ(ComputePlan(in)->recommended_reducers, 25u);
  in.reducer_gbps = 32;  // an explicit bandwidth wins over the type's
  EXPECT_EQ(ComputePlan(in)->recommended_reducers, 13u);
  ASSERT_NE(FindMachineType(kDefaultReducerMachine), nullptr);
  EXPECT_EQ(FindMachineType("a2-highgpu-8g"), nullptr);
}

TEST(SizingTest, UnknownMachineTypeIsNamed) {
  PlanInput in = Inputs(4, 100, 0);
  in.reducer_machine = "n1-highcpu-17";
  auto p = ComputePlan(in);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--reducer-machine 'n1-highcpu-17' is not a type reducerctl knows"),
            std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("n1-highcpu-16"), std::string::npos);
  // Neither a bandwidth nor a machine: the message offers both.
  const auto no_nic = ComputePlan(Inputs(4, 100, 0));
  EXPECT_NE(no_nic.status().message().find("--reducer-machine"), std::string::npos);
}

}  // namespace
}  // namespace rs::reducerctl
