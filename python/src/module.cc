// reduction_server._core: the pybind11 layer. It turns Python's arguments
// into the client library's (a buffer or a raw CPU pointer, a dtype and an
// op by name), and the client's failures into reduction_server's exceptions
// (defined in Python, reduction_server/_errors.py). The Pythonic surface
// (keyword settings, torch tensors, the context manager) is the package's
// Python code; this layer stays small.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <string>

#include "common/dtype.h"
#include "python/src/binding_settings.h"
#include "python/src/py_client.h"

namespace py = pybind11;
using rs::python::PyClient;
using rs::python::PyOperation;

namespace {

// NumPy's buffer format of one element, by kind and size (the letters for
// 32- and 64-bit integers differ between platforms).
std::optional<rs::DataType> DataTypeFromFormat(std::string format, size_t itemsize) {
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || format[0] == '<')) format.erase(0, 1);
  if (format.size() != 1) return std::nullopt;
  const char c = format[0];
  if (c == 'e' && itemsize == 2) return rs::DataType::kFloat16;
  if (c == 'f' && itemsize == 4) return rs::DataType::kFloat32;
  if (c == 'd' && itemsize == 8) return rs::DataType::kFloat64;
  const bool is_signed = std::string("bhilq").find(c) != std::string::npos;
  const bool is_unsigned = std::string("BHILQ").find(c) != std::string::npos;
  if (!is_signed && !is_unsigned) return std::nullopt;
  switch (itemsize) {
    case 1: return is_signed ? rs::DataType::kInt8 : rs::DataType::kUint8;
    case 4: return is_signed ? rs::DataType::kInt32 : rs::DataType::kUint32;
    case 8: return is_signed ? rs::DataType::kInt64 : rs::DataType::kUint64;
    default: return std::nullopt;
  }
}

rs::ReduceOp OpFromName(const std::string& name) {
  std::optional<rs::ReduceOp> op = rs::ParseReduceOp(name);
  if (!op) throw rs::python::SettingsFailure{"op='" + name + "': use sum, prod, max or min"};
  return *op;
}

rs::DataType DataTypeFromName(const std::string& name) {
  std::optional<rs::DataType> dtype = rs::ParseDataType(name);
  if (!dtype) throw rs::python::SettingsFailure{"dtype '" + name + "' is not one the reducers sum"};
  return *dtype;
}

bool IsCContiguous(const py::buffer_info& info) {
  py::ssize_t expected = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] != 1 && info.strides[d] != expected) return false;
    expected *= info.shape[d];
  }
  return true;
}

std::shared_ptr<PyOperation> AllReduceBuffer(PyClient& self, py::buffer buf, const std::string& op) {
  const rs::ReduceOp reduce_op = OpFromName(op);
  py::buffer_info info;
  try {
    info = buf.request(/*writable=*/true);
  } catch (const py::error_already_set&) {
    throw rs::python::SettingsFailure{"all_reduce works in place: the buffer must be writable"};
  }
  if (!IsCContiguous(info)) {
    throw rs::python::SettingsFailure{"all_reduce needs a contiguous buffer (this one has strides; "
                                      "pass a contiguous copy, e.g. numpy.ascontiguousarray)"};
  }
  const std::optional<rs::DataType> dtype = DataTypeFromFormat(info.format, static_cast<size_t>(info.itemsize));
  if (!dtype) {
    throw rs::python::SettingsFailure{"element format '" + info.format +
                                      "' is not one the reducers sum (float16/32/64, int8/32/64, uint8/32/64)"};
  }
  return self.AllReduce(info.ptr, static_cast<size_t>(info.size), *dtype, reduce_op, buf);
}

py::dict StatsDict(const PyClient& self) {
  const rs::client::ClientStats s = self.stats();
  py::dict d;
  d["epoch"] = s.epoch;
  d["live_reducers"] = s.live_reducers;
  d["epochs_installed"] = s.epochs_installed;
  d["operations_redone"] = s.operations_redone;
  d["retained_bytes"] = s.retained_bytes;
  d["streams_per_reducer"] = s.streams_per_reducer;
  d["piece_bytes"] = s.piece_bytes;
  return d;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "Bindings over the Reduction Server's client library (use the reduction_server package).";
  py::object errors = py::module_::import("reduction_server._errors");
  // Kept for the translator, which runs after the module's init returns.
  static py::handle reducer_error = py::object(errors.attr("ReducerError")).release();
  static py::handle settings_error = py::object(errors.attr("SettingsError")).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const rs::python::ReducerFailure& e) {
      const rs::Status& s = e.status;
      // A bad setting found by the client's own checks is the caller's.
      py::handle type = s.code() == rs::Code::kInvalidArgument ? settings_error : reducer_error;
      py::object exc = type(s.message());
      exc.attr("code") = std::string(rs::CodeName(s.code()));
      PyErr_SetObject(type.ptr(), exc.ptr());
    } catch (const rs::python::SettingsFailure& e) {
      py::object exc = settings_error(e.message);
      exc.attr("code") = std::string(rs::CodeName(rs::Code::kInvalidArgument));
      PyErr_SetObject(settings_error.ptr(), exc.ptr());
    }
  });

  m.def("variables", [] {
    py::list out;
    for (const rs::python::BindingVariable& v : rs::python::BindingVariables()) {
      out.append(py::make_tuple(v.name, v.default_value, v.doc));
    }
    return out;
  }, "The variables a Client reads: (name, default, description).");

  py::class_<PyOperation, std::shared_ptr<PyOperation>>(m, "Handle", "One all-reduce in flight.")
      .def("done", &PyOperation::Done, "True once the all-reduce has finished (successfully or not); never blocks.")
      .def("wait", &PyOperation::Wait, py::arg("timeout") = py::none(),
           "Waits until done (None: no limit of its own; the client's timeouts still end it). Returns True when "
           "done, False if `timeout` seconds passed first; raises ReducerError if the all-reduce failed.")
      .def_property_readonly("seq", &PyOperation::seq)
      .def_property_readonly("buffer", &PyOperation::owner, "The object reduced in place.")
      .def("__repr__", [](const PyOperation& op) {
        return "<reduction_server.Handle seq " + std::to_string(op.seq()) + (op.Done() ? " done>" : " in flight>");
      });

  py::class_<PyClient>(m, "Client")
      .def(py::init([](const std::map<std::string, std::string>& given) {
             rs::StatusOr<rs::python::BindingOptions> options = rs::python::OptionsFromSettings(given, rs::ProcessEnv());
             if (!options.ok()) throw rs::python::SettingsFailure{options.status().message()};
             return PyClient::Create(std::move(options).value());
           }),
           py::arg("settings"))
      .def("all_reduce_buffer", &AllReduceBuffer, py::arg("buffer"), py::arg("op"))
      .def("all_reduce_ptr",
           [](PyClient& self, uintptr_t ptr, size_t count, const std::string& dtype, const std::string& op,
              py::object owner) {
             const rs::ReduceOp reduce_op = OpFromName(op);
             return self.AllReduce(reinterpret_cast<void*>(ptr), count, DataTypeFromName(dtype), reduce_op,
                                   std::move(owner));
           },
           py::arg("ptr"), py::arg("count"), py::arg("dtype"), py::arg("op"), py::arg("owner"))
      .def("close", &PyClient::Close)
      .def_property_readonly("closed", &PyClient::closed)
      .def("check", [](const PyClient& self) {
        const rs::Status s = self.health();
        if (!s.ok()) throw rs::python::ReducerFailure{s};
      }, "Raises ReducerError if the session has failed.")
      .def_property_readonly("rank", [](const PyClient& self) { return self.options().client.rank; })
      .def_property_readonly("world_size", [](const PyClient& self) { return self.options().client.world; })
      .def_property_readonly("session", [](const PyClient& self) { return self.options().session_name; })
      .def_property_readonly("reducers", [](const PyClient& self) {
        py::list out;
        for (const rs::client::Endpoint& e : self.options().client.reducers) out.append(e.ToString());
        return out;
      })
      .def("stats", &StatsDict)
      .def("__repr__", &PyClient::Repr);
}
