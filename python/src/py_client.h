// What Python holds: a Client of the client library and the all-reduces it
// has in flight, each with a reference to the Python object that owns its
// buffer, so a buffer cannot be freed while sockets still read into it, even
// when the caller drops the handle before waiting.
//
// Threading: every method is called with the GIL held (Python serialises
// them, which is the one-caller rule of Client::AllReduce); the blocking ones
// (Create, Wait, Close) release it while they wait, so other Python threads
// and the reducers' I/O go on.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "client/client.h"
#include "python/src/binding_settings.h"

namespace rs::python {

namespace py = pybind11;

// A failure the client reported; module.cc raises it as ReducerError.
struct ReducerFailure {
  Status status;
};
// A bad setting or argument, found before anything was sent; raised as
// reduction_server.SettingsError (a ReducerError and a ValueError).
struct SettingsFailure {
  std::string message;
};

class PyOperation {
 public:
  PyOperation(std::shared_ptr<client::Operation> op, py::object owner)
      : op_(std::move(op)), owner_(std::move(owner)) {}
  bool Done() const { return op_->Done(); }
  // Blocks (GIL released) until done; raises ReducerFailure if the
  // all-reduce failed. Returns false if `timeout` passed first.
  bool Wait(std::optional<double> timeout_s);
  uint64_t seq() const { return op_->seq(); }
  const py::object& owner() const { return owner_; }
  client::Operation& op() const { return *op_; }

 private:
  std::shared_ptr<client::Operation> op_;
  py::object owner_;
};

class PyClient {
 public:
  // Connects and waits (GIL released) until every rank has joined.
  static std::unique_ptr<PyClient> Create(BindingOptions options);
  ~PyClient();

  // In place: `data` (count elements of dtype) is sent and receives the
  // result. `owner` keeps the memory alive until the operation is done.
  std::shared_ptr<PyOperation> AllReduce(void* data, size_t count, DataType dtype, ReduceOp op, py::object owner);
  // Waits (GIL released) for what is in flight, then stops the client's
  // threads. Idempotent; later calls of AllReduce raise.
  void Close();
  bool closed() const { return client_ == nullptr; }
  // The error that failed the session, or ok.
  Status health() const;
  std::string Repr() const;
  const BindingOptions& options() const { return options_; }
  client::ClientStats stats() const;

 private:
  PyClient(BindingOptions options, std::unique_ptr<client::Client> client)
      : options_(std::move(options)), client_(std::move(client)) {}
  void PruneDone();

  BindingOptions options_;
  std::unique_ptr<client::Client> client_;
  std::deque<std::shared_ptr<PyOperation>> in_flight_;
};

}  // namespace rs::python
