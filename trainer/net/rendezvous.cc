#include "trainer/net/rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace rs::trainer {
namespace {

constexpr char kMagic[8] = {'R', 'S', 'T', 'R', 'A', 'I', 'N', '1'};
constexpr size_t kHelloFixed = 8 + 4 + 4 + 4;  // magic, rank, world, settings length
constexpr size_t kMaxSettings = 16 << 10;
constexpr size_t kMaxMessage = 4 << 10;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

std::string Errno(int err) { return std::strerror(err); }

std::string Seconds(std::chrono::milliseconds d) {
  std::ostringstream s;
  s << d.count() / 1000.0 << " s";
  return s.str();
}

int MsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
}

bool SendAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 1000) <= 0) return false;  // a peer that reads nothing for 1 s is gone
      continue;
    }
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ErrorReply(const std::string& message) {
  std::string out(1, '\1');
  const std::string m = message.substr(0, kMaxMessage);
  PutU32(&out, static_cast<uint32_t>(m.size()));
  return out + m;
}

// The first line that differs between two settings texts, "a vs b".
std::string FirstDifference(const std::string& mine, const std::string& theirs) {
  std::istringstream a(mine), b(theirs);
  std::string la, lb;
  while (true) {
    const bool ha = static_cast<bool>(std::getline(a, la));
    const bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "(no difference found)";
    if (la != lb || ha != hb) return "'" + (hb ? lb : "") + "' where rank 0 has '" + (ha ? la : "") + "'";
  }
}

std::string PeerName(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) {
    return "?";
  }
  return host;
}

struct Pending {
  int fd;
  std::string in;
};

struct Hello {
  uint32_t rank = 0;
  uint32_t world = 0;
  std::string settings;
  std::string peer;
};

// Reads what a connection sent so far. Returns true once a whole hello is
// in (then *hello is set); closes and forgets connections that are not ours.
bool ReadHello(Pending& p, Hello* hello) {
  char buf[4096];
  const ssize_t n = recv(p.fd, buf, sizeof(buf), 0);
  const bool gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
  if (n > 0) p.in.append(buf, static_cast<size_t>(n));
  const bool bad_magic = p.in.size() >= 8 && std::memcmp(p.in.data(), kMagic, 8) != 0;
  const bool too_long = p.in.size() >= kHelloFixed && GetU32(p.in.data() + 16) > kMaxSettings;
  if (gone || bad_magic || too_long) {
    close(p.fd);  // not one of ours, or it gave up: ignore it
    p.fd = -1;
    return false;
  }
  if (p.in.size() < kHelloFixed || p.in.size() < kHelloFixed + GetU32(p.in.data() + 16)) return false;
  hello->rank = GetU32(p.in.data() + 8);
  hello->world = GetU32(p.in.data() + 12);
  hello->settings = p.in.substr(kHelloFixed, GetU32(p.in.data() + 16));
  hello->peer = PeerName(p.fd);
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<RendezvousServer>> RendezvousServer::Listen(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  std::string why = "no address";
  auto try_bind = [&](const char* node) -> int {
    if (int rc = getaddrinfo(node, port_text.c_str(), &hints, &res); rc != 0) {
      why = gai_strerror(rc);
      return -1;
    }
    int fd = -1;
    for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
      fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        why = Errno(errno);
        close(fd);
        fd = -1;
      }
    }
    freeaddrinfo(res);
    res = nullptr;
    return fd;
  };
  int fd = try_bind(host.c_str());
  std::string where = host + ":" + port_text;
  if (fd < 0 && why == Errno(EADDRNOTAVAIL)) {
    fd = try_bind(nullptr);  // host is not ours (NAT, a service name): every address
    where = "*:" + port_text + " (for " + host + ")";
  }
  if (fd < 0) {
    return Status(Code::kIo, "rank 0 cannot listen for the rendezvous on " + host + ":" + port_text + ": " + why);
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const uint16_t bound = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return std::unique_ptr<RendezvousServer>(new RendezvousServer(fd, bound, where));
}

RendezvousServer::~RendezvousServer() { close(fd_); }

Status RendezvousServer::Serve(uint32_t world, const std::string& settings, const RendezvousBlob& blob,
                               std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  // After a failure rank 0 stays a little longer, so that ranks arriving
  // late learn the cause too instead of waiting for their own timeout.
  auto linger_until = Clock::time_point::max();
  std::vector<Pending> pending;
  std::map<uint32_t, std::string> joined;  // rank -> its address
  std::vector<int> waiting;                // said hello, not answered yet
  size_t answered = 0;
  Status failure;
  auto fail = [&](Status st) {
    if (!failure.ok()) return;
    failure = std::move(st);
    linger_until = std::min(deadline, Clock::now() + std::chrono::seconds(5));
  };
  const std::string ok_reply = std::string(1, '\0') + std::string(blob.begin(), blob.end());
  while (true) {
    if (failure.ok() && joined.size() + 1 >= world) break;
    if (!failure.ok()) {
      const std::string reply = ErrorReply("rank 0: " + failure.message());
      for (int fd : waiting) {
        SendAll(fd, reply);
        close(fd);
      }
      answered += waiting.size();
      waiting.clear();
      if (answered + 1 >= world || Clock::now() >= linger_until) break;
    } else if (Clock::now() >= deadline) {
      std::string missing;
      size_t n = 0;
      for (uint32_t r = 1; r < world; ++r) {
        if (joined.count(r) != 0) continue;
        if (n++ < 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      if (n > 16) missing += " and " + std::to_string(n - 16) + " more";
      fail(Status(Code::kTimeout, std::string(n == 1 ? "rank " : "ranks ") + missing +
                                      " never reached the rendezvous at " + where_ + " within " + Seconds(timeout) +
                                      " (not started, or another WORLD_SIZE, MASTER_ADDR or MASTER_PORT?)"));
      linger_until = Clock::now();  // the missing ranks are not coming
      continue;
    }
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    for (const Pending& p : pending) fds.push_back({p.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), MsLeft(failure.ok() ? deadline : linger_until)) < 0 && errno != EINTR) {
      fail(Status(Code::kIo, "rendezvous: poll failed: " + Errno(errno)));
      continue;
    }
    if (fds[0].revents & POLLIN) {
      for (int c; (c = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) pending.push_back({c, {}});
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      Hello h;
      if (fds[i].revents == 0 || !ReadHello(pending[i - 1], &h)) continue;
      waiting.push_back(pending[i - 1].fd);
      pending[i - 1].fd = -1;
      if (!failure.ok()) continue;  // answered with the error above
      const std::string who = "the process at " + h.peer + " claiming rank " + std::to_string(h.rank);
      if (h.world != world) {
        fail(Status(Code::kMismatch,
                    who + " has WORLD_SIZE " + std::to_string(h.world) + ", rank 0 has " + std::to_string(world)));
      } else if (h.rank == 0 || h.rank >= world) {
        fail(Status(Code::kMismatch, who + ": ranks other than 0 must be 1 to " + std::to_string(world - 1)));
      } else if (joined.count(h.rank) != 0) {
        fail(Status(Code::kMismatch, "rank " + std::to_string(h.rank) + " was claimed twice, by " + joined[h.rank] +
                                         " and by " + h.peer));
      } else if (h.settings != settings) {
        fail(Status(Code::kMismatch,
                    "rank " + std::to_string(h.rank) + " (" + h.peer +
                        ") runs with other settings than rank 0: " + FirstDifference(settings, h.settings)));
      } else {
        joined[h.rank] = h.peer;
      }
    }
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return p.fd < 0; }),
                  pending.end());
  }
  for (int fd : waiting) {
    SendAll(fd, ok_reply);
    close(fd);
  }
  for (const Pending& p : pending) close(p.fd);
  return failure.ok() ? Status::Ok() : failure.Prefixed("rendezvous");
}

StatusOr<RendezvousBlob> RendezvousJoin(const RendezvousConfig& config) {
  const std::string where = config.host + ":" + std::to_string(config.port);
  // Rank 0 reports a missing rank at its own deadline; wait a little longer
  // so that its message, which names the rank, is what we print.
  const auto grace = std::clamp<std::chrono::milliseconds>(config.timeout / 4, std::chrono::milliseconds(500),
                                                           std::chrono::milliseconds(10'000));
  const auto deadline = Clock::now() + config.timeout + grace;
  std::string last_error = "no answer";
  int fd = -1;
  while (fd < 0) {
    if (Clock::now() >= deadline) {
      return Status(Code::kTimeout, "rendezvous: could not reach rank 0 at " + where + " within " +
                                        Seconds(config.timeout) + " (" + last_error +
                                        "); is rank 0 running, with the same MASTER_ADDR and MASTER_PORT?");
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = getaddrinfo(config.host.c_str(), std::to_string(config.port).c_str(), &hints, &res); rc != 0) {
      last_error = std::string("cannot resolve ") + config.host + ": " + gai_strerror(rc);
    } else {
      for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
          last_error = Errno(errno);
          close(fd);
          fd = -1;
        }
      }
      freeaddrinfo(res);
    }
    // Rank 0 may simply not be listening yet: try again shortly.
    if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string hello(kMagic, sizeof(kMagic));
  PutU32(&hello, config.rank);
  PutU32(&hello, config.world);
  PutU32(&hello, static_cast<uint32_t>(config.settings.size()));
  hello += config.settings;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (!SendAll(fd, hello)) {
    close(fd);
    return Status(Code::kIo, "rendezvous: cannot send to rank 0 at " + where);
  }
  std::string in;
  while (true) {
    if (!in.empty() && in[0] == '\0' && in.size() >= 1 + sizeof(RendezvousBlob)) break;
    if (!in.empty() && in[0] != '\0' && in.size() >= 5 &&
        in.size() >= 5 + std::min<size_t>(GetU32(&in[1]), kMaxMessage)) {
      break;
    }
    if (Clock::now() >= deadline) {
      close(fd);
      return Status(Code::kTimeout,
                    "rendezvous: rank 0 at " + where + " gave no answer within " + Seconds(config.timeout));
    }
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, MsLeft(deadline));
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      close(fd);
      return Status(Code::kPeerFailed, "rendezvous: rank 0 at " + where + " closed the connection without an answer");
    }
  }
  close(fd);
  if (in[0] != '\0') {
    const size_t len = std::min<size_t>(GetU32(&in[1]), kMaxMessage);
    return Status(Code::kPeerFailed, "rendezvous failed: " + in.substr(5, len));
  }
  RendezvousBlob blob;
  std::memcpy(blob.data(), in.data() + 1, blob.size());
  return blob;
}

StatusOr<RendezvousBlob> Rendezvous(const RendezvousConfig& config, const RendezvousBlob& blob) {
  if (config.world <= 1) return blob;
  if (config.rank != 0) return RendezvousJoin(config);
  StatusOr<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen(config.host, config.port);
  if (!server.ok()) return server.status();
  RS_RETURN_IF_ERROR((*server)->Serve(config.world, config.settings, blob, config.timeout));
  return blob;
}

}  // namespace rs::trainer
