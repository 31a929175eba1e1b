"""A DDP communication hook that all-reduces gradients through the reducers.

    from reduction_server.torch import ReducerState, allreduce_hook
    model = DistributedDataParallel(model, ...)
    model.register_comm_hook(ReducerState(), allreduce_hook)

Everything else (the process group's broadcasts, barriers, FSDP's all-gathers) stays on
the job's own backend, NCCL with the platform's network plugin or gloo: only DDP's gradient
buckets go to the reducers. Settings are the Client's (REDUCER_ADDRS, REDUCER_JOB_TOKEN, ...,
or keyword arguments of ReducerState); rank and world size come from the process group, and
rank 0 names the session and tells the others over it.

The hook averages as DDP's default hook does: it divides the bucket by the world size, then
sums it over the ranks (the reducers sum in rank order, so every rank gets the same bits).
CPU buckets are reduced in place. CUDA buckets are copied to pinned host memory on a side
stream, reduced there, and copied back; buckets overlap one another and backward.

A failure (a lost reducer with failover off, a timeout) completes the bucket's future with
a ReducerError; DDP raises it from ``backward()`` (as a RuntimeError carrying the message
on torch versions that wrap it); ``state.check()`` raises the ReducerError itself.

A job that ends ends its session: every open ReducerState is closed at
``torch.distributed.destroy_process_group()`` (of its group, or of all) and at interpreter
exit, so each rank says goodbye to the reducers after its last all-reduce and no rank
reports the others' exit as a failure. ``close()`` does it earlier.
"""
import atexit
import functools
import queue
import threading
import uuid
import weakref

import torch
import torch.distributed as dist

from . import Client, ReducerError

__all__ = ["ReducerState", "allreduce_hook"]


class ReducerState:
    """The hook's state: one Client (one session) and the threads that complete futures.

    ``process_group``: the group whose ranks share the session (default: the whole job).
    ``settings``: the Client's keyword arguments (addrs, job_token, failover, ...).
    Closed at ``destroy_process_group`` and at exit, or earlier with ``close()``."""

    def __init__(self, process_group=None, **settings):
        group = process_group if process_group is not None else dist.group.WORLD
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        settings.setdefault("rank", rank)
        settings.setdefault("world_size", world)
        if settings.get("session") is None:
            settings["session"] = _agree_on_session(group, rank)
        self.world_size = int(settings["world_size"])
        self.client = Client(**settings)
        self._closed = False
        self._group = group
        _close_at_end(self)
        # Futures complete in the order the buckets went out (the reducers
        # finish them in that order too).
        self._to_complete = queue.Queue()
        self._completer = threading.Thread(target=self._complete_loop, name="rs-hook-complete", daemon=True)
        self._completer.start()
        self._cuda = None  # _CudaStaging, made on the first CUDA bucket

    def check(self):
        """Raises ReducerError if the session has failed."""
        self.client.check()

    def close(self):
        """Ends this rank's part in the session after its last all-reduce (waiting for
        those in flight): the reducers end the session well once every rank has."""
        if self._closed:
            return
        self._closed = True
        _open_states.discard(self)
        if self._cuda is not None:
            self._cuda.close()
        self._to_complete.put(None)
        self._completer.join()
        self.client.close()

    def __repr__(self):
        return "<reduction_server.torch.ReducerState %r>" % (self.client,)

    # Futures may not be completed on the thread that runs the hook (DDP
    # would wait on them there), so a thread waits for each all-reduce.
    def _complete_loop(self):
        while True:
            item = self._to_complete.get()
            if item is None:
                return
            wait, complete, fut = item
            try:
                wait()
                complete()
            except BaseException as e:  # every failure reaches DDP, none ends the thread
                fut.set_exception(e)

    # wait(): blocks until the all-reduce is done (raises if it failed);
    # complete(): sets fut's result.
    def _submit(self, wait, complete, fut):
        self._to_complete.put((wait, complete, fut))


# The states not closed yet, closed when the job ends (weakly held: a state
# dropped earlier closes through its Client's destructor).
_open_states = weakref.WeakSet()
_exit_hooks_installed = False


def _close_at_end(state):
    global _exit_hooks_installed
    _open_states.add(state)
    if _exit_hooks_installed:
        return
    _exit_hooks_installed = True
    atexit.register(_close_states, None)
    # destroy_process_group is where a job says it is done with its ranks; torch
    # offers no hook there, so it is wrapped (once; what it does is unchanged).
    # A caller that bound the function before this ran still closes at exit.
    original = dist.destroy_process_group
    if getattr(original, "_reduction_server_closes_states", False):
        return

    @functools.wraps(original)
    def destroy_process_group(group=None, *args, **kwargs):
        _close_states(group)
        return original(group, *args, **kwargs)

    destroy_process_group._reduction_server_closes_states = True
    dist.destroy_process_group = destroy_process_group
    c10d = getattr(dist, "distributed_c10d", None)
    if c10d is not None and getattr(c10d, "destroy_process_group", None) is original:
        c10d.destroy_process_group = destroy_process_group


def _close_states(group):
    """Closes the open states of `group` (None or WORLD: every state), each once."""
    everything = group is None or group is dist.group.WORLD
    for state in list(_open_states):
        if everything or state._group is group:
            _open_states.discard(state)
            state.close()


def _agree_on_session(group, rank):
    """A fresh session name from the group's rank 0: two states never share one."""
    name = ["ddp-" + uuid.uuid4().hex if rank == 0 else None]
    if group is dist.group.WORLD:
        src = 0
    elif hasattr(dist, "get_global_rank"):  # torch 2.x
        src = dist.get_global_rank(group, 0)
    else:  # torch 1.13
        src = dist.distributed_c10d._get_global_rank(group, 0)
    dist.broadcast_object_list(name, src=src, group=group)
    return name[0]


def allreduce_hook(state, bucket):
    """DDP comm hook: the bucket's average over the ranks, through the reducers."""
    buf = bucket.buffer()
    buf.div_(state.world_size)  # first, as DDP's allreduce_hook does (no overflow in float16)
    if buf.device.type == "cpu":
        fut = torch.futures.Future()
        try:
            handle = state.client.all_reduce(buf)
        except ReducerError as e:
            fut.set_exception(e)
            return _raising(fut)
        state._submit(handle.wait, lambda: fut.set_result(buf), fut)
        return _raising(fut)
    if state._cuda is None:
        state._cuda = _CudaStaging(state)
    return _raising(state._cuda.all_reduce(buf, bucket.index()))


def _raising(fut):
    """A future DDP sees fail with the ReducerError's message: set_exception alone
    leaves the exception as the future's value, which DDP's C++ side then fails to
    read as a tensor ("Unable to cast ... to Tensor"); raised in a callback, it
    becomes the chained future's error."""
    return fut.then(lambda f: f.value())


class _CudaStaging:
    """CUDA buckets through pinned host buffers (one per bucket, reused every step).

    The hook enqueues the device-to-host copy on a side stream after the work that
    produced the gradients; an issuer thread waits for that copy and starts the
    all-reduce, so bucket k+1's copy and send overlap bucket k's reduction; the completer
    copies the result back on the side stream and completes a CUDA-aware future, which
    makes DDP's stream wait for the copy. Untested on GPUs in CI (CPU only there)."""

    def __init__(self, state):
        self._state = state
        self._stream = torch.cuda.Stream()
        self._host = {}
        self._to_issue = queue.Queue()
        self._issuer = threading.Thread(target=self._issue_loop, name="rs-hook-issue", daemon=True)
        self._issuer.start()

    def all_reduce(self, buf, index):
        host = self._host.get(index)
        if host is None or host.numel() != buf.numel() or host.dtype != buf.dtype:
            host = torch.empty(buf.numel(), dtype=buf.dtype, pin_memory=True)
            self._host[index] = host
        fut = torch.futures.Future(devices=[buf.device])
        self._stream.wait_stream(torch.cuda.current_stream(buf.device))
        with torch.cuda.stream(self._stream):
            host.copy_(buf.view(-1), non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(self._stream)
        buf.record_stream(self._stream)
        self._to_issue.put((buf, host, copied, fut))
        return fut

    def _issue_loop(self):
        while True:
            item = self._to_issue.get()
            if item is None:
                return
            buf, host, copied, fut = item
            try:
                copied.synchronize()
                handle = self._state.client.all_reduce(host)
            except BaseException as e:
                fut.set_exception(e)
                continue
            self._state._submit(handle.wait, lambda b=buf, h=host, f=fut: self._copy_back(b, h, f), fut)

    def _copy_back(self, buf, host, fut):
        with torch.cuda.device(buf.device), torch.cuda.stream(self._stream):
            buf.view(-1).copy_(host, non_blocking=True)
            # Under the side stream: the future records an event on it, and
            # DDP's stream waits for that before reading the bucket.
            fut.set_result(buf)

    def close(self):
        self._to_issue.put(None)
        self._issuer.join()
