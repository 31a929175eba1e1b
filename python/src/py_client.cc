#include "python/src/py_client.h"

#include <cstdio>

namespace rs::python {
namespace {

// Warnings and errors of the I/O threads go to stderr: calling into Python
// from them would need the GIL, which a rank waiting in Wait() has let go
// but a busy training loop may hold for long.
void LogToStderr(client::LogLevel level, const std::string& message) {
  if (level == client::LogLevel::kWarn || level == client::LogLevel::kError) {
    std::fprintf(stderr, "reduction_server: %s\n", message.c_str());
  }
}

}  // namespace

bool PyOperation::Wait(std::optional<double> timeout_s) {
  std::chrono::milliseconds timeout = std::chrono::hours(24);
  if (timeout_s) timeout = std::chrono::milliseconds(static_cast<int64_t>(*timeout_s * 1000.0));
  Status status;
  {
    py::gil_scoped_release unlocked;
    status = op_->Wait(timeout);
  }
  // A wait that timed out leaves the operation running; one that failed
  // with kTimeout (a reducer that did not answer) is done.
  if (status.code() == Code::kTimeout && !op_->Done()) return false;
  if (!status.ok()) throw ReducerFailure{status};
  return true;
}

std::unique_ptr<PyClient> PyClient::Create(BindingOptions options) {
  options.client.log = LogToStderr;
  StatusOr<std::unique_ptr<client::Client>> client = [&] {
    py::gil_scoped_release unlocked;
    return client::Client::Create(options.client);
  }();
  if (!client.ok()) throw ReducerFailure{client.status()};
  return std::unique_ptr<PyClient>(new PyClient(std::move(options), std::move(client).value()));
}

PyClient::~PyClient() { Close(); }

void PyClient::PruneDone() {
  std::erase_if(in_flight_, [](const std::shared_ptr<PyOperation>& op) { return op->Done(); });
}

std::shared_ptr<PyOperation> PyClient::AllReduce(void* data, size_t count, DataType dtype, ReduceOp op,
                                                 py::object owner) {
  if (client_ == nullptr) throw SettingsFailure{"this Client is closed"};
  PruneDone();
  auto handle = std::make_shared<PyOperation>(client_->AllReduce(data, data, count, dtype, op), std::move(owner));
  in_flight_.push_back(handle);
  return handle;
}

void PyClient::Close() {
  if (client_ == nullptr) return;
  // Taken out first, with the GIL: a thread that calls all_reduce while
  // this one waits finds the client closed instead of a list in use.
  std::deque<std::shared_ptr<PyOperation>> ops;
  ops.swap(in_flight_);
  std::unique_ptr<client::Client> client = std::move(client_);
  {
    // Every operation ends within the client's own timeouts (op_timeout,
    // liveness): a lost reducer or rank fails them rather than hanging.
    py::gil_scoped_release unlocked;
    for (const std::shared_ptr<PyOperation>& op : ops) {
      while (!op->Done()) {
        // Wait's status is the operation's; Close reports nothing.
        (void)op->op().Wait(std::chrono::hours(1)).ok();
      }
    }
    client.reset();  // joins the I/O threads
  }
  ops.clear();  // drops the buffers' owners, with the GIL
}

Status PyClient::health() const { return client_ ? client_->health() : Status::Ok(); }

client::ClientStats PyClient::stats() const { return client_ ? client_->stats() : client::ClientStats{}; }

std::string PyClient::Repr() const {
  std::string reducers;
  for (const client::Endpoint& e : options_.client.reducers) reducers += (reducers.empty() ? "" : ",") + e.ToString();
  std::string state = "closed";
  if (client_) state = client_->health().ok() ? "ready" : "failed";
  return "<reduction_server.Client rank " + std::to_string(options_.client.rank) + "/" +
         std::to_string(options_.client.world) + " session '" + options_.session_name + "' reducers " + reducers +
         " (" + options_.reducers_source + ") failover " + (options_.client.failover ? "on" : "off") + ", " + state +
         ">";
}

}  // namespace rs::python
