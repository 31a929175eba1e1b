// MakeIoContext (common/io_context.h): work posted to an I/O thread runs in
// the order it was posted, whichever thread posted it. Both ends rely on it
// when a stream or a connection is told things from several threads; asio's
// concurrency hint of 1 broke it (a post from the I/O thread itself waited in
// a private queue for its handler to return, and one made later from another
// thread ran first).
#include <gtest/gtest.h>

#include <asio/post.hpp>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "common/io_context.h"

namespace rs {
namespace {

TEST(IoContext, WorkRunsInTheOrderItWasPostedFromAnyThread) {
  auto io = MakeIoContext();
  std::string order;  // Only touched on the I/O thread.
  std::mutex mu;
  std::condition_variable cv;
  bool other_posted = false;

  asio::post(*io, [&] {
    // The I/O thread posts first, then another thread posts while this
    // handler still runs: the first post must still run first.
    asio::post(*io, [&] { order += "own "; });
    std::thread other([&] {
      asio::post(*io, [&] { order += "other "; });
      std::lock_guard<std::mutex> lock(mu);
      other_posted = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return other_posted; });
    lock.unlock();
    other.join();
  });
  io->run();
  EXPECT_EQ(order, "own other ");
}

}  // namespace
}  // namespace rs
