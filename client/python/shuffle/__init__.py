# SPDX-License-Identifier: MIT
"""shuffle: all-to-all messaging for the processes of a parallel job.

Each process talks only to the ``shuffled`` daemon of its node, through two
shared-memory rings; the daemons relay between nodes.  This package wraps
``libshuffle-client`` (``<shuffle.h>``, ``man 3 shuffle``) and moves numpy
batches in and out: one call for thousands of records.

    import numpy as np, shuffle

    with shuffle.Context() as ctx:              # rank/world from the launcher
        dst = np.random.randint(0, ctx.world, 1000)
        ctx.send_many(dst, np.arange(1000, dtype=np.int64))   # 1000 records of 8 B
        ctx.epoch()                             # collective: all delivered
        b = ctx.recv_many()                     # everything sent to this rank
        ids = b.array(np.int64)                 # payloads as one array

Calls: Context(...), send, bcast, send_many, recv_many, recv, poll,
epoch, flush, node_info, stats, fileno, pending, close.  Errors are
subclasses of shuffle.Error (an OSError) carrying ``errno`` and the
library's ``detail`` (shf_error_detail()).  See docs/python.md.
"""
from __future__ import annotations

import errno as _errno
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple, Optional

import numpy as np

from . import _core
from ._core import FLUSH_DELIVERY, FLUSH_ORIGIN, FLUSH_REMOTE, API_VERSION, strerror

__all__ = [
    "Context", "Batch", "Message", "NodeInfo",
    "Error", "NoDaemon", "Timeout", "RankGone", "NodeDown", "PermissionDenied",
    "Disconnected", "Closed", "WouldBlock", "MessageTooLarge", "InvalidArgument",
    "AlreadyRegistered", "ResourceLimit", "ProtocolMismatch", "Busy",
    "FLUSH_ORIGIN", "FLUSH_REMOTE", "FLUSH_DELIVERY", "API_VERSION", "strerror",
]


# ----------------------------------------------------------------- errors

class Error(OSError):
    """A failed call of libshuffle-client.

    ``errno`` is the (positive) errno, ``strerror`` the library's message
    for it, ``detail`` the library's detail for this failure
    (``shf_error_detail()``, may be empty).  ``send_many`` failures also
    carry ``sent``: how many records were sent before the failure.
    """

    def __init__(self, err: int, detail: str = "") -> None:
        msg = strerror(err)
        super().__init__(err, msg + (": " + detail if detail else ""))
        self.detail = detail
        self.sent: Optional[int] = None


class NoDaemon(Error):
    """No daemon answered (ECONNREFUSED); the detail names every place tried."""


class Timeout(Error):
    """The call did not complete in time (ETIMEDOUT); an epoch can be resumed."""


class RankGone(Error):
    """A rank of the job left: records to it were dropped (ESRCH)."""


class NodeDown(Error):
    """A node of the job went down: records to it were dropped (EHOSTDOWN)."""


class PermissionDenied(Error):
    """The job or the daemon belongs to another user (EACCES, EPERM)."""


class Disconnected(Error):
    """The daemon ended this context (ENOTCONN, or ECANCELED after a drain): close it."""


class Closed(Error):
    """The context was closed (EBADF): every call after close() raises this."""


class WouldBlock(Error):
    """No room now (EAGAIN)."""


class MessageTooLarge(Error, ValueError):
    """A record is larger than the daemon's max_msg (EMSGSIZE)."""


class InvalidArgument(Error, ValueError):
    """The library refused an argument (EINVAL); see the detail."""


class AlreadyRegistered(Error):
    """This rank of this job is already registered (EEXIST)."""


class ResourceLimit(Error):
    """The daemon's memory or client budget is exhausted (EDQUOT, ENOMEM, EMFILE)."""


class Busy(Error):
    """The daemon has no free slot, or another thread is in epoch() (EBUSY)."""


class ProtocolMismatch(Error):
    """A daemon of an incompatible protocol version (EPROTO)."""


class Deadlock(Error):
    """Called from a place that would wait for itself (EDEADLK)."""


_BY_ERRNO = {
    _errno.ECONNREFUSED: NoDaemon, _errno.ENOENT: NoDaemon,
    _errno.ETIMEDOUT: Timeout,
    _errno.ESRCH: RankGone,
    _errno.EHOSTDOWN: NodeDown,
    _errno.EACCES: PermissionDenied, _errno.EPERM: PermissionDenied,
    _errno.ENOTCONN: Disconnected, _errno.ECANCELED: Disconnected,
    _errno.EBADF: Closed,
    _errno.EAGAIN: WouldBlock,
    _errno.EMSGSIZE: MessageTooLarge,
    _errno.EINVAL: InvalidArgument,
    _errno.EEXIST: AlreadyRegistered,
    _errno.EDQUOT: ResourceLimit, _errno.ENOMEM: ResourceLimit, _errno.EMFILE: ResourceLimit,
    _errno.EBUSY: Busy,
    _errno.EPROTO: ProtocolMismatch,
    _errno.EDEADLK: Deadlock,
}


def error_class(err: int) -> type:
    """The Error subclass raised for a (positive) errno."""
    return _BY_ERRNO.get(err, Error)


def _raise(err: int, detail: str) -> None:
    raise error_class(err)(err, detail)


_core._set_raise(_raise)


# ---------------------------------------------------------------- results

class Message(NamedTuple):
    """One received record."""
    src: int
    type: int
    data: bytes


class Batch:
    """Records received by one recv_many() call.

    ``src`` (int32) and ``type`` (uint32) have one entry per record; the
    payloads are concatenated in ``data`` (uint8), record i being
    ``data[offsets[i]:offsets[i+1]]`` (``offsets``: int64, n+1 entries).
    ``array(dtype)`` gives the payloads as one array when they all have one
    size; iterating gives ``Message`` tuples.
    """

    __slots__ = ("src", "type", "data", "offsets")

    def __init__(self, src: np.ndarray, type: np.ndarray, data: np.ndarray,
                 offsets: np.ndarray) -> None:
        self.src = src
        self.type = type
        self.data = data
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.src)

    def __repr__(self) -> str:
        return f"<shuffle.Batch of {len(self)} records, {len(self.data)} bytes>"

    @property
    def lengths(self) -> np.ndarray:
        """Payload size of each record (int64)."""
        return np.diff(self.offsets)

    def payload(self, i: int) -> bytes:
        """Record i's payload as bytes."""
        return self.data[self.offsets[i]:self.offsets[i + 1]].tobytes()

    def __getitem__(self, i: int) -> Message:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return Message(int(self.src[i]), int(self.type[i]), self.payload(i))

    def __iter__(self) -> Iterator[Message]:
        for i in range(len(self)):
            yield self[i]

    def array(self, dtype: Any = None) -> np.ndarray:
        """The payloads as one array, without a copy.

        ``dtype=None``: an (n, k) uint8 array; otherwise a 1-D array of
        ``dtype`` (structured dtypes too).  Raises ValueError when the
        records do not all have the one size k (or dtype's itemsize).
        """
        n = len(self)
        size = None if dtype is None else np.dtype(dtype).itemsize
        if n == 0:
            if dtype is None:
                return np.empty((0, 0), np.uint8)
            return np.empty(0, dtype)
        if size is None:
            size = int(self.offsets[1] - self.offsets[0])
        if len(self.data) != n * size or np.any(np.diff(self.offsets) != size):
            raise ValueError(
                f"records are not all {size} bytes (sizes {int(self.lengths.min())}"
                f"..{int(self.lengths.max())}): use data and offsets")
        if dtype is None:
            return self.data.reshape(n, size)
        return self.data.view(np.dtype(dtype))


@dataclass(frozen=True)
class NodeInfo:
    """Where the job's ranks are, as this rank's daemon knows it."""
    node: int                 #: this rank's node, 0 <= node < nodes
    nodes: int                #: nodes with ranks of the job
    local_count: int          #: ranks of the job on this node (this one too)
    local_ranks: list         #: those ranks, ascending
    node_counts: list         #: ranks on node 0, 1, ...


_FLUSH = {"origin": FLUSH_ORIGIN, "remote": FLUSH_REMOTE, "delivery": FLUSH_DELIVERY}


# ---------------------------------------------------------------- context

class Context(_core.Context):
    """A process's membership in a job, and its connection to the node's daemon.

    ``Context(rank=None, world=None, job=None, socket=None, ring_bytes=0,
    timeout=None, on_batch=None)`` connects, registers and returns once
    every rank of the job has registered (like ``shf_open()``):

    - ``rank``, ``world``: both or neither; ``None`` takes them from the
      launcher's environment (``SHF_RANK``/``SHF_WORLD``, PyTorch env://,
      Open MPI, PMIx, PMI, Slurm), as the C library does.  With mpi4py pass
      ``comm.rank, comm.size``.
    - ``job``: the job's name; ``None``: ``SHF_JOB`` or the launcher's key.
    - ``socket``: the daemon's socket; ``None``: found as in C
      (``SHF_SOCKET``, ``SHF_RUNTIME_DIR``, your daemon, the node's).
    - ``ring_bytes``: ring size per direction (0: the daemon's default).
    - ``timeout``: seconds; the default bound of open, blocking sends,
      flush and epoch (``None``: 60 s; negative: forever).
    - ``on_batch``: callback mode.  ``fn(batch)`` is called with each
      ``Batch`` that poll(), epoch() or flush() pulled in, on the calling
      thread, before they return; recv_many() is then not used.

    Use it as a context manager (``close()`` on exit).  Every call after
    ``close()`` raises ``Closed``; closing twice is fine.
    """

    def __init__(self, rank: Optional[int] = None, world: Optional[int] = None,
                 job: Optional[str] = None, socket: Optional[str] = None,
                 ring_bytes: int = 0, timeout: Optional[float] = None,
                 on_batch: Optional[Callable[[Batch], Any]] = None) -> None:
        self._on_batch = on_batch
        super().__init__(rank, world, job, socket, ring_bytes, timeout)

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<shuffle.Context closed>"
        return f"<shuffle.Context rank {self.rank} of {self.world}>"

    # send, bcast, send_many, stats, fileno, pending, close: C methods
    # (their docs are in the .pyi and docs/python.md).

    def recv_many(self, max: Optional[int] = None,
                  timeout: Optional[float] = None) -> Batch:
        """Records that have arrived, as one Batch (possibly empty).

        Waits up to ``timeout`` seconds for the first record (``None``: do
        not wait; negative: forever); returns at most ``max`` records.
        After ``epoch()`` returned, it returns every record sent to this
        rank before the epoch.
        """
        return Batch(*self._recv_raw(max, timeout))

    def recv(self, timeout: Optional[float] = None) -> Optional[Message]:
        """One record as a Message, or None if none came within ``timeout``
        seconds (``None``: do not wait; negative: forever)."""
        b = self.recv_many(1, timeout)
        return b[0] if len(b) else None

    def poll(self, timeout: Optional[float] = 0) -> int:
        """Pull waiting records in, waiting up to ``timeout`` seconds for
        the first (``None`` or 0: do not wait; negative: forever).  In
        callback mode hand them to ``on_batch`` and return how many; else
        return how many are now buffered (``pending()``)."""
        if self._on_batch is None:
            return self._pull(timeout)
        return self._dispatch(timeout)

    def _dispatch(self, timeout: Optional[float]) -> int:
        n = 0
        b = Batch(*self._recv_raw(None, timeout))
        while len(b):
            n += len(b)
            self._on_batch(b)
            b = Batch(*self._recv_raw(None, None))
        return n

    def epoch(self, timeout: Optional[float] = None) -> None:
        """Collective over the job: returns once every record any rank sent
        before entering has been delivered (it is then in recv_many()).
        Raises RankGone if a rank left, Timeout (call again to resume)."""
        super().epoch(timeout)
        if self._on_batch is not None:
            self._dispatch(None)

    def flush(self, what: Any = FLUSH_REMOTE, timeout: Optional[float] = None) -> None:
        """``what``: FLUSH_ORIGIN / "origin", FLUSH_REMOTE / "remote",
        FLUSH_DELIVERY / "delivery" (see docs/api.md).  Raises RankGone /
        NodeDown when records sent since the last flush were dropped."""
        if isinstance(what, str):
            try:
                what = _FLUSH[what]
            except KeyError:
                raise ValueError(f"flush target {what!r}: origin, remote or delivery") from None
        super().flush(what, timeout)
        if self._on_batch is not None:
            self._dispatch(None)

    def node_info(self) -> NodeInfo:
        """Where the job's ranks are (a NodeInfo)."""
        node, nodes, local_count, local_ranks, node_counts = self._node_info_raw()
        return NodeInfo(node, nodes, local_count, local_ranks, node_counts)
