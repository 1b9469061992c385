# SPDX-License-Identifier: MIT
"""Every call of shuffle.Context on one node, each error class the
library can produce here, mixed-size batches, closing twice and use after
close, and the argument checks (TypeError / ValueError)."""
import errno, os, subprocess, sys
import numpy as np
import shuffle
from common import check, raises, open_ranks, in_threads, job, socket, done

rng = np.random.default_rng(1)

# ---- one rank: every call
with shuffle.Context(rank=0, world=1, job=job("one")) as c:
    check(c.rank == 0 and c.world == 1, "rank/world")
    check(repr(c).startswith("<shuffle.Context rank 0"), repr(c))
    check(isinstance(c.fileno(), int) and c.fileno() >= 0, "fileno")
    ni = c.node_info()
    check(isinstance(ni, shuffle.NodeInfo), "node_info type")
    check((ni.node, ni.nodes, ni.local_count, ni.local_ranks, ni.node_counts) == (0, 1, 1, [0], [1]),
          f"node_info {ni}")
    c.send(0, b"bytes", type=1)
    c.send(0, bytearray(b"ba"), 2)
    c.send(dst=0, data=memoryview(b"xmv")[1:], type=3)
    c.send(0, np.arange(3, dtype=np.int16))
    c.send(0, b"")                                        # empty payload
    c.bcast(b"to-self", type=9, self=True)
    c.bcast(b"not-to-self", type=10)                      # world 1: nobody
    c.flush(shuffle.FLUSH_ORIGIN)
    c.flush("remote", timeout=5)
    c.epoch(timeout=10)
    check(c.pending() == 6, f"pending {c.pending()} after epoch, want 6")
    b = c.recv_many()
    got = [(m.src, m.type, m.data) for m in b]
    want = [(0, 1, b"bytes"), (0, 2, b"ba"), (0, 3, b"mv"),
            (0, 0, np.arange(3, dtype=np.int16).tobytes()), (0, 0, b""), (0, 9, b"to-self")]
    check(got == want, f"recv_many got {got}")
    check(b.src.dtype == np.int32 and b.type.dtype == np.uint32 and b.offsets.dtype == np.int64,
          "batch dtypes")
    check(c.recv() is None and len(c.recv_many(timeout=0.05)) == 0, "nothing more")
    c.flush(shuffle.FLUSH_DELIVERY)
    st = c.stats()
    # a broadcast counts once as sent, also when nobody gets it
    check(st["sent_msgs"] == 7 and st["delivered_msgs"] == 6 and st["epochs"] == 1
          and st["flushes"] == 3, f"stats {st}")

    # send_many, the three record forms, scalar and array types
    n = 1000
    dst = np.zeros(n, np.int64)
    recs = rng.integers(0, 256, (n, 24), dtype=np.uint8)
    check(c.send_many(dst, recs, type=5) == n, "send_many (n,k) returns n")
    sdt = np.dtype([("id", "<i8"), ("x", "<f4"), ("tag", "S4")])
    srec = np.zeros(n, sdt)
    srec["id"] = np.arange(n)
    srec["x"] = np.arange(n) / 2
    srec["tag"] = b"abcd"
    c.send_many(dst.astype(np.int32), srec, type=np.arange(n, dtype=np.uint32))
    # mixed sizes: bytes + offsets, sizes 0 .. 3000
    sizes = rng.integers(0, 3000, n)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    blob = rng.integers(0, 256, int(offs[-1]), dtype=np.uint8).tobytes()
    c.send_many(list(dst), blob, type=7, offsets=offs)
    c.epoch()
    b = c.recv_many(max=n)                                  # at most max
    check(len(b) == n, f"recv_many(max={n}) gave {len(b)}")
    check(np.array_equal(b.array(), recs) and np.all(b.type == 5), "(n,k) records round trip")
    b = c.recv_many(max=n)
    check(np.array_equal(b.array(sdt), srec) and np.array_equal(b.type, np.arange(n)),
          "structured records round trip")
    b = c.recv_many()
    check(len(b) == n and np.array_equal(b.offsets, offs) and b.data.tobytes() == blob
          and np.all(b.type == 7), "mixed-size records round trip")
    raises(ValueError, b.array)                             # not one size
    check(b.payload(3) == blob[offs[3]:offs[4]], "payload(i)")

    # big batch (more than a ring holds: the call waits and delivers meanwhile)
    n = 100_000
    c.send_many(np.zeros(n, np.int32), np.arange(n, dtype=np.uint64))
    c.epoch()
    b = c.recv_many()
    check(len(b) == n and np.array_equal(b.array(np.uint64), np.arange(n, dtype=np.uint64)),
          f"100k batch round trip ({len(b)})")

    # ---- argument checks: TypeError / ValueError, nothing sent
    before = c.stats()["sent_msgs"]
    a = np.zeros((10, 16), np.uint8)
    d = np.zeros(10, np.int32)
    raises(ValueError, c.send_many, d[:5], np.zeros((10, 16), np.uint8)[::2])   # not contiguous
    raises(ValueError, c.send_many, d, np.asfortranarray(np.zeros((10, 16), np.uint8)))
    raises(TypeError, c.send_many, d, np.zeros((10, 4), np.float32))     # 2-D, not uint8
    raises(TypeError, c.send_many, d, np.array([object()] * 10))         # object dtype
    raises(TypeError, c.send_many, d, [b"x"] * 10)                       # not an array
    raises(TypeError, c.send_many, np.zeros(10, np.float64), a)          # float dst
    raises(ValueError, c.send_many, np.zeros(9, np.int32), a)            # n mismatch
    raises(ValueError, c.send_many, np.zeros((10, 1), np.int32), a)      # 2-D dst
    raises(ValueError, c.send_many, np.full(10, 1), a)                   # rank outside world
    raises(ValueError, c.send_many, np.full(10, -1), a)
    raises(ValueError, c.send_many, d, a, type=-1)
    raises(ValueError, c.send_many, d, a, type=np.full(10, 2**32))
    raises(ValueError, c.send_many, d, a, type=np.zeros(3, np.int64))    # type length
    raises(ValueError, c.send_many, d[:3], b"abc", offsets=[0, 2, 1, 3])  # decreasing
    raises(ValueError, c.send_many, d[:3], b"abc", offsets=[0, 1, 2, 9])  # past the end
    raises(ValueError, c.send_many, d[:3], b"abc", offsets=[0, 1, 2])     # n, not n+1
    raises(ValueError, c.send_many, d, np.zeros((10, 2, 2), np.uint8))    # 3-D
    raises(ValueError, c.send, 1, b"x")
    raises(ValueError, c.send, 0, b"x", 2**32)
    raises(TypeError, c.send, 0, "a str has no buffer")
    raises(ValueError, c.send, 0, np.zeros((4, 4), np.uint8)[:, 1])      # not contiguous
    raises(TypeError, c.send, 0)
    raises(ValueError, c.flush, 7)
    raises(ValueError, c.flush, "sideways")
    raises(ValueError, c.recv_many, 0)
    check(c.stats()["sent_msgs"] == before, "a refused batch sent nothing")

    # the library's own refusals
    e = raises(shuffle.MessageTooLarge, c.send, 0, bytes(1 << 20))
    check(e is not None and e.errno == errno.EMSGSIZE and isinstance(e, ValueError), "EMSGSIZE")
    e = raises(shuffle.MessageTooLarge, c.send_many, np.zeros(3, np.int32),
               b"a" * 10 + bytes(1 << 20), offsets=[0, 5, 10, 10 + (1 << 20)])
    # shf_send_many() checks a call's records before it sends any
    check(e is not None and e.sent == 0, f"send_many reports what it sent ({e and e.sent})")
    c.epoch()
    check(len(c.recv_many()) == 0, "nothing of the refused call arrived")

# ---- callback mode: batches handed to on_batch by poll(), epoch(), flush()
seen = []
with shuffle.Context(rank=0, world=1, job=job("cb"), on_batch=seen.append) as c:
    c.send_many(np.zeros(50, np.int32), np.arange(50, dtype=np.int32))
    c.epoch()
    check(sum(len(b) for b in seen) == 50 and all(isinstance(b, shuffle.Batch) for b in seen),
          f"on_batch after epoch: {[len(b) for b in seen]}")
    c.send(0, b"one")
    n = c.poll(timeout=5)
    check(n == 1 and seen[-1].payload(0) == b"one", f"poll in callback mode: {n}")

# ---- closed twice, use after close
c = shuffle.Context(rank=0, world=1, job=job("close"))
c.close()
c.close()
check(c.closed, "closed")
for call, args in [("send", (0, b"x")), ("bcast", (b"x",)), ("send_many", ([0], b"x", 0, [0, 1])),
                   ("recv_many", ()), ("recv", ()), ("poll", ()), ("epoch", ()), ("flush", (1,)),
                   ("node_info", ()), ("stats", ()), ("fileno", ()), ("pending", ())]:
    e = raises(shuffle.Closed, getattr(c, call), *args)
    check(e is None or e.errno == errno.EBADF, f"{call} after close: errno")
raises(shuffle.Closed, getattr, c, "rank")
with shuffle.Context(rank=0, world=1, job=job("cm")) as c2:
    pass
raises(shuffle.Closed, c2.send, 0, b"x")
del c, c2

# ---- errors from open
e = raises(shuffle.NoDaemon, shuffle.Context, rank=0, world=1, job=job("nd"),
           socket="/nonexistent/shuffled.sock")
check(e is not None and e.errno == errno.ECONNREFUSED and e.detail, f"NoDaemon detail: {e}")
check(isinstance(e, shuffle.Error) and isinstance(e, OSError), "Error is an OSError")
e = raises(shuffle.Timeout, shuffle.Context, rank=0, world=2, job=job("to"), timeout=0.5)
check(e is not None and "missing ranks 1" in str(e), f"Timeout names the missing rank: {e}")
e = raises(shuffle.InvalidArgument, shuffle.Context, rank=0, world=1, job=job("inv"),
           ring_bytes=3000)
check(e is not None and isinstance(e, ValueError), "InvalidArgument is a ValueError")
raises(ValueError, shuffle.Context, rank=0)                 # rank without world
raises(ValueError, shuffle.Context, rank=2, world=2)
j = job("dup")
ca, cb = open_ranks(shuffle, 2, j)
raises(shuffle.AlreadyRegistered, shuffle.Context, rank=0, world=2, job=j, timeout=2)

# ---- two ranks in this process: all-to-all, then a rank leaves: RankGone
for r, c in enumerate((ca, cb)):
    c.send_many(np.array([0, 1, 1 - r]), np.full((3, 8), r, np.uint8), type=[r, r, r])
in_threads([ca.epoch, cb.epoch])
for r, c in enumerate((ca, cb)):
    b = c.recv_many()
    check(sorted(b.src.tolist()) == ([0, 1, 1] if r == 0 else [0, 0, 1]), f"rank {r} got {b.src}")
# fileno(): readable once a record waits (after recv_many() came back empty)
import select
check(len(ca.recv_many()) == 0 and ca.pending() == 0, "nothing waiting")
cb.send(0, b"wake")
r, _, _ = select.select([ca.fileno()], [], [], 10)
check(r == [ca.fileno()], "fileno() readable when a record waits")
m = ca.recv(timeout=5)
check(m is not None and m.data == b"wake" and m.src == 1, f"the record behind fileno(): {m}")
cb.close()
ca.send(1, b"to a rank that left")
e = raises(shuffle.RankGone, ca.flush, "remote", timeout=10)
check(e is not None and e.errno == errno.ESRCH, "RankGone errno")
check(ca.stats()["dropped_dead"] == 1, f"dropped_dead {ca.stats()}")
raises(shuffle.RankGone, ca.epoch, timeout=10)
ca.close()

# ---- PermissionDenied: another user may not join a root job (root only)
if os.geteuid() == 0:
    j = job("perm")
    import threading, time
    r0 = []
    t = threading.Thread(target=lambda: r0.append(raises(shuffle.Timeout, shuffle.Context, rank=0,
                                                          world=2, job=j, timeout=4)))
    t.start()
    time.sleep(0.3)   # rank 0 created the job (owner root)
    code = ("import shuffle,sys\n"
            "try:\n"
            f"    shuffle.Context(rank=1, world=2, job={j!r}, socket={socket()!r}, timeout=5)\n"
            "except shuffle.PermissionDenied as e:\n"
            "    print('denied', e.errno); sys.exit(0)\n"
            "except BaseException as e:\n"
            "    print('other', type(e).__name__, e); sys.exit(1)\n"
            "sys.exit(2)\n")
    p = subprocess.run([sys.executable, "-c", code], user=65534, capture_output=True, text=True,
                       env=dict(os.environ))
    check(p.returncode == 0, f"PermissionDenied as nobody: rc {p.returncode} {p.stdout} {p.stderr}")
    t.join()
else:
    print("api: not root: PermissionDenied not checked")

check(shuffle.error_class(errno.EHOSTDOWN) is shuffle.NodeDown, "NodeDown class")
check(shuffle.strerror(errno.ETIMEDOUT) != "", "strerror")
done("api")
