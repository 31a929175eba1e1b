// Backward must compute the true gradient (checked against finite
// differences of the loss) and hand each layer to the caller as soon as it
// is final, last layer first: the buckets' all-reduces start from there.
#include "trainer/model/cpu_mlp.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rs::trainer {
namespace {

class CpuMlpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = MlpLayout::Create(shape_);
    ASSERT_TRUE(l.ok());
    layout_ = *l;
    params_ = InitialParameters(layout_, 3);
    SyntheticData(shape_, 3).MakeBatch(0, 0, 5, &batch_);
  }

  MlpShape shape_{6, 10, 3, 3};
  MlpLayout layout_;
  std::vector<float> params_;
  Batch batch_;
};

TEST_F(CpuMlpTest, GradientsMatchFiniteDifferences) {
  CpuMlp mlp(layout_);
  mlp.Forward(params_.data(), batch_);
  std::vector<float> grads(params_.size(), NAN);
  ASSERT_TRUE(mlp.Backward(params_.data(), grads.data(), [](int) { return Status::Ok(); }).ok());
  // Central differences in float64 of a float32 model: a step of 1e-3
  // leaves errors of order 1e-4 relative; a wrong formula is off by far more.
  size_t checked = 0;
  for (size_t i = 0; i < params_.size(); i += 3) {
    std::vector<float> p = params_;
    const float h = 1e-3f;
    p[i] = params_[i] + h;
    const double up = mlp.Forward(p.data(), batch_);
    p[i] = params_[i] - h;
    const double down = mlp.Forward(p.data(), batch_);
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(grads[i], numeric, 2e-3 * std::max(1.0, std::fabs(numeric))) << layout_.Describe(i);
    ++checked;
  }
  EXPECT_GT(checked, 50u);
}

TEST_F(CpuMlpTest, HandsOutLayersLastFirstEachComplete) {
  CpuMlp mlp(layout_);
  mlp.Forward(params_.data(), batch_);
  std::vector<float> grads(params_.size(), NAN);
  std::vector<int> order;
  ASSERT_TRUE(mlp.Backward(params_.data(), grads.data(),
                           [&](int layer) {
                             order.push_back(layer);
                             // This layer's weight and bias gradients are written.
                             for (size_t i = layout_.weight_offset(layer);
                                  i < layout_.bias_offset(layer) + shape_.LayerOut(layer); ++i) {
                               if (std::isnan(grads[i]))
                                 return Status(Code::kInternal, "unwritten " + layout_.Describe(i));
                             }
                             return Status::Ok();
                           })
                  .ok());
  EXPECT_EQ(order, (std::vector<int>{2, 1, 0}));
}

TEST_F(CpuMlpTest, StopsAtTheCallersError) {
  CpuMlp mlp(layout_);
  mlp.Forward(params_.data(), batch_);
  std::vector<float> grads(params_.size());
  int calls = 0;
  Status st = mlp.Backward(params_.data(), grads.data(), [&](int) {
    ++calls;
    return Status(Code::kPeerFailed, "reducer gone");
  });
  EXPECT_EQ(st.code(), Code::kPeerFailed);
  EXPECT_EQ(calls, 1);
}

TEST_F(CpuMlpTest, LossIsTheMeanSquaredError) {
  // With all-zero parameters the model outputs 0: the loss is the mean of t^2.
  CpuMlp mlp(layout_);
  std::vector<float> zero(params_.size(), 0.0f);
  double want = 0;
  for (float t : batch_.y) want += static_cast<double>(t) * t;
  EXPECT_DOUBLE_EQ(mlp.Forward(zero.data(), batch_), want / static_cast<double>(batch_.y.size()));
}

}  // namespace
}  // namespace rs::trainer
