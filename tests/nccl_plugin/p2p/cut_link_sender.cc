// Helper of cut_link_netns_test.sh: one point-to-point send lane (the
// plugin's SocketWorker on a socket with SetStreamOptions) to PEER:PORT,
// sending without pause; after 1 s it runs CUT (a shell command that cuts
// the link) and waits at most 30 s for the lane to fail.
// Prints "failed S s after the cut: STATUS" and exits 0, or "no failure ..."
// and exits 1; 2 on bad arguments or a failed connect.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nccl_plugin/p2p/socket.h"
#include "nccl_plugin/p2p/socket_worker.h"

int main(int argc, char** argv) {
  using namespace rs;
  using namespace rs::plugin;
  if (argc != 5) {
    std::fprintf(stderr, "usage: p2p_cut_link_sender PEER_IPV4 PORT LIVENESS_MS CUT_COMMAND\n");
    return 2;
  }
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[2])));
  if (inet_pton(AF_INET, argv[1], &peer.sin_addr) != 1) {
    std::fprintf(stderr, "not an IPv4 address: %s\n", argv[1]);
    return 2;
  }
  // As StartConnect does: the options (the congestion control above all)
  // before connect, with the plugin's defaults.
  Socket sock(::socket(AF_INET, SOCK_STREAM, 0));
  if (sock.valid()) SetStreamOptions(sock, std::chrono::milliseconds(std::atoi(argv[3])), TcpTuning{});
  if (!sock.valid() || ::connect(sock.fd(), reinterpret_cast<const sockaddr*>(&peer), sizeof(peer)) != 0) {
    std::perror("connect");
    return 2;
  }

  std::mutex mu;
  std::optional<Status> failure;
  std::vector<Socket> sockets;
  sockets.push_back(std::move(sock));
  StatusOr<std::unique_ptr<SocketWorker>> worker =
      SocketWorker::Create(std::move(sockets), "send comm to the cut peer", [&](Status st) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::move(st);
      });
  if (!worker.ok()) {
    std::fprintf(stderr, "%s\n", worker.status().ToString().c_str());
    return 2;
  }
  // 64 GiB in 1 MiB chunks: far more than the link carries in the test's
  // time. 4 GiB was not: an unpaced stream (cubic) on an unshaped veth sent
  // it all before the cut, and an idle lane has nothing to fail.
  std::vector<char> data(1 << 20, 'x');
  std::atomic<int> pending{0};
  for (int i = 0; i < 65536; ++i) {
    ++pending;
    (*worker)->Enqueue(0, Chunk{reinterpret_cast<uint8_t*>(data.data()), data.size(), true, &pending});
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (std::system(argv[4]) != 0) {
    std::fprintf(stderr, "the cut command failed: %s\n", argv[4]);
    return 2;
  }
  const auto cut = std::chrono::steady_clock::now();
  if (pending.load() == 0) {
    std::printf("every chunk was sent before the cut: nothing left to fail\n");
    return 2;
  }
  std::optional<Status> seen;
  for (int i = 0; i < 3000 && !seen; ++i) {  // 30 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lock(mu);
    seen = failure;
  }
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut).count();
  worker->reset();  // joins the lane's thread; `data` outlives it
  if (!seen) {
    std::printf("no failure %.1f s after the cut\n", after);
    return 1;
  }
  std::printf("failed %.2f s after the cut: %s\n", after, seen->ToString().c_str());
  return 0;
}
