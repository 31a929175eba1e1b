#include "nccl_plugin/p2p/data_sockets.h"

#include <algorithm>

namespace rs::plugin {

StatusOr<std::unique_ptr<DataSockets>> DataSockets::Create(std::vector<Socket> sockets, int threads,
                                                       std::string what, std::chrono::milliseconds rto_floor) {
  std::unique_ptr<DataSockets> plane(new DataSockets(what));
  const size_t n = sockets.size();
  const size_t t = std::clamp<size_t>(static_cast<size_t>(threads), 1, std::max<size_t>(n, 1));
  // Socket i goes to worker i % t, as its (i / t)-th lane.
  std::vector<std::vector<Socket>> per_worker(t);
  for (size_t i = 0; i < n; ++i) per_worker[i % t].push_back(std::move(sockets[i]));
  DataSockets* self = plane.get();
  for (size_t w = 0; w < t && n > 0; ++w) {
    StatusOr<std::unique_ptr<SocketWorker>> worker = SocketWorker::Create(
        std::move(per_worker[w]), what, [self](Status st) { self->Fail(std::move(st)); }, rto_floor);
    if (!worker.ok()) return worker.status();
    plane->workers_.push_back(std::move(worker).value());
  }
  for (size_t i = 0; i < n; ++i) plane->lanes_.push_back({plane->workers_[i % t].get(), i / t});
  return plane;
}

DataSockets::~DataSockets() {
  workers_.clear();  // joins before the failure state goes away
}

size_t DataSockets::ChunkCount(size_t size, size_t sockets) {
  if (size == 0 || sockets == 0) return 0;
  size_t by_size = (size + kMinChunk - 1) / kMinChunk;
  return std::min(by_size, sockets);
}

void DataSockets::Post(uint8_t* data, size_t size, bool send, std::atomic<int>* pending) {
  const size_t n = ChunkCount(size, lanes_.size());
  pending->store(static_cast<int>(n), std::memory_order_relaxed);
  // Rotate the first socket so that successive mid-sized messages spread.
  const size_t first = static_cast<size_t>(messages_++ % lanes_.size());
  size_t offset = 0;
  for (size_t k = 0; k < n; ++k) {
    size_t len = size / n + (k < size % n ? 1 : 0);
    const LaneRef& lane = lanes_[(first + k) % lanes_.size()];
    lane.worker->Enqueue(lane.local, Chunk{data + offset, len, send, pending});
    offset += len;
  }
}

Status DataSockets::failure() const {
  if (!failed()) return Status::Ok();
  std::lock_guard<std::mutex> lock(fail_mu_);
  return failure_;
}

void DataSockets::Fail(Status status) {
  std::lock_guard<std::mutex> lock(fail_mu_);
  if (failed_.load(std::memory_order_relaxed)) return;
  failure_ = std::move(status);
  failed_.store(true, std::memory_order_release);
}

}  // namespace rs::plugin
