"""reduction_server: all-reduce through the Reduction Server's reducers from Python.

    import numpy as np, reduction_server as rs
    with rs.Client(session="job-42") as client:       # REDUCER_ADDRS, RANK, WORLD_SIZE from the environment
        grads = np.ones(1 << 20, dtype=np.float32)
        client.all_reduce(grads).wait()                # in place: grads now holds the sum over ranks

Settings come from the same variables as the NCCL plugin (REDUCER_ADDRS or CLUSTER_SPEC,
REDUCER_JOB_TOKEN or REDUCER_JOB_TOKEN_FILE, REDUCER_LIVENESS_TIMEOUT, REDUCER_FAILOVER, ...),
plus RANK and WORLD_SIZE (torchrun's) and REDUCER_SESSION. Each is also a keyword argument,
named after the variable without REDUCER_ and in lower case (``addrs``, ``job_token``,
``liveness_timeout``, ``failover``, ``rank``, ``world_size``, ``session``, ``cluster_spec``);
an argument wins over the environment. ``reduction_server.variables()`` lists them.

For PyTorch DDP, see reduction_server.torch (a comm hook).
"""
import atexit as _atexit
import datetime as _datetime
import weakref as _weakref

from ._errors import ReducerError, SettingsError
from . import _core

__all__ = ["Client", "Handle", "ReducerError", "SettingsError", "variables"]

Handle = _core.Handle

# Durations are written with units (500ms, 5s); a number or a timedelta given
# as an argument is seconds.
_DURATIONS = {"REDUCER_OP_TIMEOUT", "REDUCER_CONNECT_TIMEOUT", "REDUCER_LIVENESS_TIMEOUT"}

# torch dtypes by name, for tensors (which have no buffer protocol).
_TORCH_DTYPES = {
    "torch.float32": "float32", "torch.float64": "float64", "torch.float16": "float16",
    "torch.bfloat16": "bfloat16", "torch.int8": "int8", "torch.uint8": "uint8",
    "torch.int32": "int32", "torch.int64": "int64",
}


def variables():
    """The variables a Client reads, as (name, default, description) tuples."""
    return _core.variables()


def _keyword_names():
    names = {}
    for name, _, _ in _core.variables():
        key = name[len("REDUCER_"):] if name.startswith("REDUCER_") else name
        names[key.lower()] = name
    return names


def _as_text(name, value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if name in _DURATIONS and isinstance(value, _datetime.timedelta):
        value = value.total_seconds()
    if name in _DURATIONS and isinstance(value, (int, float)):
        return "%dms" % round(value * 1000)
    return str(value)


def _settings(kwargs):
    names = _keyword_names()
    given = {}
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError("Client() got an unexpected keyword argument %r; the settings are: %s"
                            % (key, ", ".join(sorted(names))))
        if value is not None:
            given[names[key]] = _as_text(names[key], value)
    return given


# Clients not closed yet: closed at interpreter exit, so that each rank says
# goodbye to the reducers (which then end the session well) instead of
# leaving it to the process's end. Weakly held: a Client dropped earlier
# closes through its destructor.
_open_clients = _weakref.WeakSet()


@_atexit.register
def _close_open_clients():
    for client in list(_open_clients):
        client.close()


class Client:
    """One rank's connection to the reducers for one session.

    Blocks until every rank (WORLD_SIZE of them, with the same session) has joined,
    within REDUCER_CONNECT_TIMEOUT. ``all_reduce`` is to be called from one thread at
    a time, in the same order on every rank; handles may be waited on from any thread.
    Closed by ``close()``, at the end of a ``with`` block, or at interpreter exit.
    """

    def __init__(self, **settings):
        self._core = _core.Client(_settings(settings))
        _open_clients.add(self)

    def all_reduce(self, buf, op="sum"):
        """Starts an all-reduce of ``buf`` in place and returns a Handle (``wait()``, ``done()``).

        ``buf``: a writable C-contiguous NumPy array (or any buffer) or a contiguous torch
        CPU tensor; float32, float64, float16, bfloat16 (torch), int8/32/64, uint8/32/64.
        ``op``: "sum", "prod", "max" or "min". The buffer is kept alive until the all-reduce
        is done; do not read or write it before ``wait()`` returns."""
        if type(buf).__module__.startswith("torch") and hasattr(buf, "data_ptr"):
            return self._all_reduce_tensor(buf, op)
        return self._core.all_reduce_buffer(buf, op)

    def _all_reduce_tensor(self, t, op):
        if t.device.type != "cpu":
            raise SettingsError("all_reduce takes CPU tensors (this one is on %s); for CUDA gradients use "
                                "reduction_server.torch.allreduce_hook, which stages them in pinned memory"
                                % t.device)
        if not t.is_contiguous():
            raise SettingsError("all_reduce needs a contiguous tensor (this one has strides %s); pass "
                                "t.contiguous() and copy the result back" % (tuple(t.stride()),))
        dtype = _TORCH_DTYPES.get(str(t.dtype))
        if dtype is None:
            raise SettingsError("dtype %s is not one the reducers sum" % t.dtype)
        return self._core.all_reduce_ptr(t.data_ptr(), t.numel(), dtype, op, t)

    def check(self):
        """Raises ReducerError if the session has failed."""
        self._core.check()

    def stats(self):
        return self._core.stats()

    def close(self):
        """Waits for the all-reduces in flight (bounded by the client's timeouts), then says
        goodbye to the reducers and disconnects."""
        _open_clients.discard(self)
        self._core.close()

    @property
    def closed(self):
        return self._core.closed

    rank = property(lambda self: self._core.rank)
    world_size = property(lambda self: self._core.world_size)
    session = property(lambda self: self._core.session)
    reducers = property(lambda self: self._core.reducers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return repr(self._core)
