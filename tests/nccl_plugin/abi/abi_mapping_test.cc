// The ABI layer's pure mappings: our Status codes to NCCL result codes, and
// NCCL's data types and ops to ours (and what reduceSupport answers); and
// NCCL's limits as the core really applies them (handles, request pools,
// transfer sizes).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "nccl_plugin/abi/nccl_abi.h"
#include "nccl_plugin/collnet/collnet.h"
#include "nccl_plugin/collnet/collnet_comm.h"
#include "nccl_plugin/nccl_limits.h"
#include "nccl_plugin/p2p/request.h"
#include "nccl_plugin/p2p/wire.h"

namespace rs::plugin::abi {
namespace {

TEST(AbiMapping, StatusCodesToResults) {
  EXPECT_EQ(ResultFromCode(Code::kOk), Result::kSuccess);
  // Peer or network failures.
  EXPECT_EQ(ResultFromCode(Code::kPeerFailed), Result::kRemoteError);
  EXPECT_EQ(ResultFromCode(Code::kTimeout), Result::kRemoteError);
  EXPECT_EQ(ResultFromCode(Code::kProtocol), Result::kRemoteError);
  EXPECT_EQ(ResultFromCode(Code::kIo), Result::kSystemError);
  EXPECT_EQ(ResultFromCode(Code::kResourceExhausted), Result::kSystemError);
  // Deployment problems and ranks that disagree.
  EXPECT_EQ(ResultFromCode(Code::kAuth), Result::kInvalidUsage);
  EXPECT_EQ(ResultFromCode(Code::kVersion), Result::kInvalidUsage);
  EXPECT_EQ(ResultFromCode(Code::kMismatch), Result::kInvalidUsage);
  // Bad arguments and misuse.
  EXPECT_EQ(ResultFromCode(Code::kInvalidArgument), Result::kInvalidArgument);
  EXPECT_EQ(ResultFromCode(Code::kInternal), Result::kInternalError);
  EXPECT_EQ(ResultFromCode(Code::kCancelled), Result::kInternalError);
  EXPECT_EQ(ResultFromCode(static_cast<Code>(999)), Result::kInternalError);
}

TEST(AbiMapping, MisconfigurationIsInvalidUsageWhateverTheCode) {
  EXPECT_EQ(ResultFor(Code::kInvalidArgument, true), Result::kInvalidUsage);
  EXPECT_EQ(ResultFor(Code::kIo, true), Result::kInvalidUsage);
  EXPECT_EQ(ResultFor(Code::kOk, true), Result::kSuccess);
  EXPECT_EQ(ResultFor(Code::kInvalidArgument, false), Result::kInvalidArgument);
}

TEST(AbiMapping, ResultCodeValuesAreNccls) {
  EXPECT_EQ(static_cast<int>(Result::kSystemError), 2);
  EXPECT_EQ(static_cast<int>(Result::kInternalError), 3);
  EXPECT_EQ(static_cast<int>(Result::kInvalidArgument), 4);
  EXPECT_EQ(static_cast<int>(Result::kInvalidUsage), 5);
  EXPECT_EQ(static_cast<int>(Result::kRemoteError), 6);
  EXPECT_EQ(static_cast<int>(Result::kInProgress), 7);
}

TEST(AbiMapping, DataTypes) {
  for (int t = 0; t <= kNcclBfloat16; ++t) {
    std::optional<DataType> ours = DataTypeFromNccl(t);
    ASSERT_TRUE(ours.has_value()) << t;
    EXPECT_EQ(static_cast<int>(*ours), t);  // the wire values equal NCCL's
  }
  EXPECT_EQ(DataTypeFromNccl(kNcclFloat16), DataType::kFloat16);
  EXPECT_EQ(DataTypeFromNccl(kNcclBfloat16), DataType::kBfloat16);
  EXPECT_FALSE(DataTypeFromNccl(kNcclFloat8e4m3).has_value());
  EXPECT_FALSE(DataTypeFromNccl(kNcclFloat8e5m2).has_value());
  EXPECT_FALSE(DataTypeFromNccl(-1).has_value());
  EXPECT_FALSE(DataTypeFromNccl(12).has_value());
}

TEST(AbiMapping, ReduceOps) {
  EXPECT_EQ(ReduceOpFromNccl(kNcclSum), ReduceOp::kSum);
  EXPECT_EQ(ReduceOpFromNccl(kNcclProd), ReduceOp::kProd);
  EXPECT_EQ(ReduceOpFromNccl(kNcclMax), ReduceOp::kMax);
  EXPECT_EQ(ReduceOpFromNccl(kNcclMin), ReduceOp::kMin);
  EXPECT_FALSE(ReduceOpFromNccl(kNcclAvg).has_value());  // NCCL hands Avg over as Sum
  EXPECT_FALSE(ReduceOpFromNccl(5).has_value());
}

TEST(AbiMapping, ReduceSupportCoversWhatTheReducersDo) {
  for (int t = 0; t < kNumDataTypes; ++t) {
    for (int op = 0; op < kNumReduceOps; ++op) {
      EXPECT_TRUE(CollNet::ReduceSupported(static_cast<DataType>(t), static_cast<ReduceOp>(op))) << t << "/" << op;
    }
  }
}

TEST(AbiMapping, HandlesFitNcclsBuffer) {
  EXPECT_EQ(kHandleMaxBytes, 128u);
  EXPECT_LE(sizeof(P2pHandle), kHandleMaxBytes);
  EXPECT_LE(sizeof(CollHandle), kHandleMaxBytes);
}

// The pools the comms really hold, filled until they refuse: a p2p comm takes
// exactly NCCL's 32 requests, a CollNet comm at least 4 x the 64 NCCL keeps
// in flight, and both then answer "cannot post now" (NULL).
template <typename Pool, typename Owner>
int Fill(Owner* owner) {
  auto pool = std::make_unique<Pool>(owner);
  int n = 0;
  while (pool->Acquire() != nullptr && n < 100000) ++n;
  return n;
}

TEST(AbiMapping, RequestPoolsHoldWhatNcclKeepsInFlight) {
  EXPECT_EQ(Fill<RequestPool>(static_cast<RequestOwner*>(nullptr)), kMaxRequestsPerComm);
  const int coll = Fill<CollRequestPool>(static_cast<CollComm*>(nullptr));
  EXPECT_EQ(coll, kCollRequestPool);
  EXPECT_GE(coll, 4 * kNcclCollMaxInFlight);
  // A released request is handed out again.
  CollRequestPool pool(nullptr);
  std::vector<CollRequest*> taken;
  while (CollRequest* r = pool.Acquire()) taken.push_back(r);
  pool.Release(taken[7]);
  EXPECT_EQ(pool.Acquire(), taken[7]);
  EXPECT_EQ(pool.Acquire(), nullptr);
}

TEST(AbiMapping, TransferLimitsAreInNcclsRange) {
  // NCCL 2.28 refuses a device whose maxP2pBytes or maxCollBytes is 0 or
  // above 1 TiB; test() reports sizes as int, so both stay below 2^31.
  EXPECT_GT(kMaxP2pBytes, 0u);
  EXPECT_LE(kMaxP2pBytes, kMaxNetSizeBytes);
  EXPECT_LT(kMaxP2pBytes, size_t{1} << 31);
  EXPECT_GT(kMaxCollBytes, 0u);
  EXPECT_LE(kMaxCollBytes, kMaxNetSizeBytes);
  EXPECT_LT(kMaxCollBytes, size_t{1} << 31);
}

}  // namespace
}  // namespace rs::plugin::abi
