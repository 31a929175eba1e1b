#include "tests/integration/hostile_clients.h"

#include <sys/resource.h>

#include <algorithm>
#include <random>

#include "protocol/wire.h"

namespace rs::testing {

class HostileClients::Client : public std::enable_shared_from_this<Client> {
 public:
  Client(HostileClients& owner, Hostility kind, asio::ip::address source, int max_total, uint64_t seed)
      : owner_(owner), kind_(kind), source_(std::move(source)), max_total_(max_total), socket_(owner.io_),
        timer_(owner.io_), rng_(seed) {}

  void Run() {
    if (owner_.stopping_) return;
    auto& made = owner_.connections_[Index(kind_)];
    if (max_total_ > 0 && made.load() >= static_cast<uint64_t>(max_total_)) return;
    made.fetch_add(1);
    asio::error_code ec;
    socket_.open(asio::ip::tcp::v4(), ec);
    if (!ec) socket_.bind({source_, 0}, ec);
    if (ec) return Again(std::chrono::milliseconds(50));
    socket_.async_connect({asio::ip::make_address("127.0.0.1"), owner_.plan_.port},
                          [self = shared_from_this()](const asio::error_code& e) {
                            if (e) return self->Again(std::chrono::milliseconds(20));
                            self->Act();
                          });
  }

  void Close() {
    asio::error_code ignored;
    timer_.cancel();
    socket_.close(ignored);
  }

 private:
  void Act() {
    out_.clear();
    switch (kind_) {
      case Hostility::kGarbage:
        out_.resize(64);
        for (auto& b : out_) b = static_cast<uint8_t>(rng_());
        out_[0] = 'G';  // never the magic
        break;
      case Hostility::kSilent:
        break;
      case Hostility::kPartialHeader: {
        std::array<uint8_t, protocol::kHeaderBytes> h;
        protocol::EncodeHeader({protocol::kProtocolVersion, protocol::FrameType::kHello, 60}, h.data());
        out_.assign(h.begin(), h.begin() + 8);
        break;
      }
      case Hostility::kHelloNoAuth:
        out_ = protocol::EncodeHello(MakeHello(2, 1));
        break;
      case Hostility::kHugeWorld:
      case Hostility::kPendingSession: {
        // Without a token on the reducer, any AUTH is accepted.
        const bool huge = kind_ == Hostility::kHugeWorld;
        out_ = protocol::EncodeHello(huge ? MakeHello(protocol::kMaxWorld, protocol::kMaxStreams) : MakeHello(256, 1));
        const auto auth = protocol::EncodeAuth({});
        out_.insert(out_.end(), auth.begin(), auth.end());
        break;
      }
      case Hostility::kFlood: {
        // A reset rather than a FIN: no TIME_WAIT, so a flood does not run
        // out of ports.
        asio::error_code ignored;
        socket_.set_option(asio::socket_base::linger(true, 0), ignored);
        Close();
        return Again(std::chrono::milliseconds(1));
      }
    }
    if (out_.empty()) return Read();
    asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](const asio::error_code& e, size_t) {
      if (e) return self->Ended();
      self->Read();
    });
  }

  protocol::Hello MakeHello(uint32_t world, uint16_t streams) {
    protocol::Hello h;
    for (auto& b : h.session) b = static_cast<uint8_t>(rng_());  // a fresh session every time
    h.world = world;
    h.streams = streams;
    return h;
  }

  // Reads (counting ERROR frames) until the reducer closes the connection.
  void Read() {
    socket_.async_read_some(asio::buffer(buf_), [self = shared_from_this()](const asio::error_code& e, size_t n) {
      if (e) return self->Ended();
      self->inbox_.insert(self->inbox_.end(), self->buf_.begin(), self->buf_.begin() + static_cast<ptrdiff_t>(n));
      self->Parse();
      self->Read();
    });
  }

  void Parse() {
    while (inbox_.size() >= protocol::kHeaderBytes) {
      protocol::FrameHeader h;
      if (!protocol::DecodeHeader(std::span(inbox_).first(protocol::kHeaderBytes), UINT32_MAX, &h).ok()) {
        inbox_.clear();
        return;
      }
      if (inbox_.size() < protocol::kHeaderBytes + h.payload_bytes) return;
      if (h.type == protocol::FrameType::kError) {
        protocol::ErrorFrame err;
        if (protocol::DecodeError(std::span(inbox_).subspan(protocol::kHeaderBytes, h.payload_bytes), &err).ok()) {
          owner_.errors_[static_cast<size_t>(err.code)].fetch_add(1);
        }
      }
      inbox_.erase(inbox_.begin(), inbox_.begin() + protocol::kHeaderBytes + h.payload_bytes);
    }
  }

  void Ended() {
    if (!owner_.stopping_) owner_.closed_by_reducer_.fetch_add(1);
    Close();
    inbox_.clear();
    Again(std::chrono::milliseconds(10));
  }

  void Again(std::chrono::milliseconds delay) {
    if (owner_.stopping_) return;
    Close();
    timer_.expires_after(delay);
    timer_.async_wait([self = shared_from_this()](const asio::error_code& e) {
      if (!e) self->Run();
    });
  }

  HostileClients& owner_;
  const Hostility kind_;
  const asio::ip::address source_;
  const int max_total_;
  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;
  std::minstd_rand rng_;
  std::vector<uint8_t> out_;
  std::array<uint8_t, 4096> buf_{};
  std::vector<uint8_t> inbox_;
};

HostileClients::HostileClients(AttackPlan plan) : plan_(std::move(plan)) {}

HostileClients::~HostileClients() { Stop(); }

void HostileClients::Start() {
  work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io_.get_executor());
  uint64_t seed = 1;
  for (const auto& loop : plan_.loops) {
    for (const auto& s : plan_.sources) {
      for (int i = 0; i < loop.per_source; ++i) {
        auto client = std::make_shared<Client>(*this, loop.kind, asio::ip::make_address(s), loop.max_total, seed++);
        clients_.push_back(client);
        asio::post(io_, [client] { client->Run(); });
      }
    }
  }
  thread_ = std::thread([this] { io_.run(); });
}

void HostileClients::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  asio::post(io_, [this] {
    for (auto& weak : clients_) {
      if (auto c = weak.lock()) c->Close();
    }
  });
  work_.reset();
  thread_.join();
}

uint64_t HostileClients::total_connections() const {
  uint64_t n = 0;
  for (const auto& c : connections_) n += c.load();
  return n;
}

size_t RaiseOpenFileLimit(size_t want) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < want) {
    lim.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(want, lim.rlim_max);
    setrlimit(RLIMIT_NOFILE, &lim);
    getrlimit(RLIMIT_NOFILE, &lim);
  }
  return lim.rlim_cur == RLIM_INFINITY ? want : lim.rlim_cur;
}

}  // namespace rs::testing
