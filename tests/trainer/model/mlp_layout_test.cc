#include "trainer/model/mlp_layout.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rs::trainer {
namespace {

TEST(MlpLayoutTest, TensorsTileTheFlatBufferLayerByLayer) {
  auto layout = MlpLayout::Create(MlpShape{5, 7, 3, 2});
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  // 5*7 + 7, 7*7 + 7, 7*2 + 2
  EXPECT_EQ(layout->num_params(), 42u + 56u + 16u);
  size_t next = 0;
  for (const ParamTensor& t : layout->tensors()) {
    EXPECT_EQ(t.offset, next);
    next += t.count;
  }
  EXPECT_EQ(next, layout->num_params());
  EXPECT_EQ(layout->weight_offset(1), 42u);
  EXPECT_EQ(layout->bias_offset(2), 42u + 56u + 14u);
  EXPECT_EQ(layout->shape().ToString(), "3 layers 5-7-7-2");
}

TEST(MlpLayoutTest, DescribeNamesLayerAndIndex) {
  auto layout = MlpLayout::Create(MlpShape{5, 7, 3, 2});
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->Describe(0), "layer 0 weight [0][0]");
  EXPECT_EQ(layout->Describe(8), "layer 0 weight [1][1]");  // input-major: [in][out]
  EXPECT_EQ(layout->Describe(36), "layer 0 bias [1]");
  EXPECT_EQ(layout->Describe(layout->num_params() - 1), "layer 2 bias [1]");
}

TEST(MlpLayoutTest, RefusesEmptyAndHugeModelsNamingWhy) {
  auto zero = MlpLayout::Create(MlpShape{5, 0, 3, 2});
  EXPECT_EQ(zero.status().code(), Code::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("width 0"), std::string::npos) << zero.status().message();
  auto huge = MlpLayout::Create(MlpShape{1024, 1 << 16, 4, 16});
  EXPECT_EQ(huge.status().code(), Code::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("2^31"), std::string::npos) << huge.status().message();
}

TEST(InitialParametersTest, SameForASeedWithinPyTorchsBound) {
  auto layout = MlpLayout::Create(MlpShape{16, 32, 3, 4});
  ASSERT_TRUE(layout.ok());
  const std::vector<float> a = InitialParameters(*layout, 9), b = InitialParameters(*layout, 9);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, InitialParameters(*layout, 10));
  for (const ParamTensor& t : layout->tensors()) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(layout->shape().LayerIn(t.layer)));
    for (size_t i = 0; i < t.count; ++i) {
      ASSERT_LE(std::fabs(a[t.offset + i]), bound) << layout->Describe(t.offset + i);
    }
  }
}

}  // namespace
}  // namespace rs::trainer
