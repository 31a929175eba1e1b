#include "trainer/backend/local_client.h"

#include <cstring>

namespace rs::trainer {
namespace {

class DoneOperation final : public client::Operation {
 public:
  explicit DoneOperation(uint64_t seq) : seq_(seq) {}
  bool Done() const override { return true; }
  Status Wait(std::chrono::milliseconds) override { return Status::Ok(); }
  Status status() const override { return Status::Ok(); }
  uint64_t seq() const override { return seq_; }

 private:
  uint64_t seq_;
};

class LocalClient final : public client::Client {
 public:
  std::shared_ptr<client::Operation> AllReduce(const void* send, void* recv, size_t count, DataType dtype,
                                               ReduceOp) override {
    if (send != recv && count > 0) std::memmove(recv, send, count * DataTypeSize(dtype));
    return std::make_shared<DoneOperation>(seq_++);
  }
  Status health() const override { return Status::Ok(); }
  uint32_t rank() const override { return 0; }
  uint32_t world() const override { return 1; }
  size_t num_reducers() const override { return 0; }

 private:
  uint64_t seq_ = 0;
};

}  // namespace

std::unique_ptr<client::Client> MakeLocalClient() { return std::make_unique<LocalClient>(); }

}  // namespace rs::trainer
