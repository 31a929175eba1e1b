#include "trainer/checks/reference.h"

#include <gtest/gtest.h>

#include <bit>

#include "trainer/backend/cpu_backend.h"
#include "trainer/backend/local_client.h"

namespace rs::trainer {
namespace {

ReferenceConfig Config(uint32_t world, DataType dtype) {
  const MlpShape shape{8, 16, 3, 2};
  auto layout = MlpLayout::Create(shape);
  EXPECT_TRUE(layout.ok());
  return ReferenceConfig{*layout,     BucketPlan(*layout, 256, 256), 4, world, 6, dtype,
                         SgdConfig{}, InitialParameters(*layout, 4)};
}

// One rank without reducers is the reference with world 1: the same data,
// the same gradients, the "sum" of one rank, the same update.
TEST(ReferenceTest, OneRankTrainingMatchesItBitForBit) {
  for (DataType dtype : {DataType::kFloat32, DataType::kBfloat16}) {
    ReferenceConfig cfg = Config(1, dtype);
    CpuBackendOptions b;
    b.layout = cfg.layout;
    b.initial_params = cfg.initial_params;
    b.grad_dtype = dtype;
    b.client = MakeLocalClient();
    auto backend = CpuBackend::Create(std::move(b));
    ASSERT_TRUE(backend.ok());
    const SyntheticData data(cfg.layout.shape(), cfg.seed);
    Reference reference(cfg);
    Batch batch;
    std::vector<float> params;
    for (uint64_t step = 0; step < 5; ++step) {
      data.MakeBatch(0, step, cfg.batch, &batch);
      ASSERT_TRUE((*backend)->SetBatch(batch).ok());
      auto loss = (*backend)->ForwardBackward([&](int layer) {
        for (size_t i : cfg.plan.ReadyAfterLayer(layer))
          RS_RETURN_IF_ERROR((*backend)->StartAllReduce(cfg.plan.buckets()[i]));
        return Status::Ok();
      });
      ASSERT_TRUE(loss.ok());
      ASSERT_TRUE((*backend)->FinishAllReduces().ok());
      ASSERT_TRUE((*backend)->ApplyUpdate(cfg.sgd).ok());
      EXPECT_EQ(reference.Step(step), *loss);
      ASSERT_TRUE((*backend)->GetParameters(&params).ok());
      const Status st = reference.Compare(params, step + 1);
      ASSERT_TRUE(st.ok()) << DataTypeName(dtype) << ": " << st.ToString();
    }
  }
}

TEST(ReferenceTest, CompareNamesTheFirstParameterOffByOneUlp) {
  ReferenceConfig cfg = Config(2, DataType::kFloat32);
  Reference reference(cfg);
  reference.Step(0);
  std::vector<float> params = reference.params();
  ASSERT_TRUE(reference.Compare(params, 1).ok());
  const size_t i = cfg.layout.bias_offset(1) + 3;
  params[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(params[i]) + 1);
  const Status st = reference.Compare(params, 1);
  EXPECT_EQ(st.code(), Code::kMismatch);
  EXPECT_NE(st.message().find("after step 1, layer 1 bias [3] is"), std::string::npos) << st.message();
}

TEST(ReferenceTest, MoreRanksSeeMoreData) {
  // The reference of 3 ranks averages 3 ranks' gradients: not what 1 rank does.
  Reference one(Config(1, DataType::kFloat32)), three(Config(3, DataType::kFloat32));
  one.Step(0);
  three.Step(0);
  EXPECT_NE(one.params(), three.params());
}

}  // namespace
}  // namespace rs::trainer
