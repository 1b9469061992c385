#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Per-call cost of ways to call libshuffle-client from Python (the
measurement behind the choice of a C extension, docs/python.md).

Each way opens its own world-of-1 context on the daemon at $SHF_SOCKET and
times N calls of shf_rank() (a call's bare cost) and of a 16-byte
shf_send() to itself (the ring drained between rounds, outside the timing).
Ways: ctypes, cffi ABI mode, cffi API mode (compiled here into a temporary
directory), and the shuffle package's C extension (ctx.send).

    SHF_SOCKET=... PYTHONPATH=BUILD/client/python /usr/bin/python3 binding_cost.py [LIBDIR]
"""
import ctypes, os, sys, tempfile, time

N, ROUND = 200_000, 10_000
libdir = sys.argv[1] if len(sys.argv) > 1 else None
libpath = os.path.join(libdir, "libshuffle-client.so.1") if libdir else "libshuffle-client.so.1"
payload = b"0123456789abcdef"
results = {}


def timed(fn, n=N):
    """Best of 3 of fn(n) -> ns spent in the timed part (fn returns it)."""
    best = None
    for _ in range(3):
        dt = fn(n) / n
        best = dt if best is None or dt < best else best
    return best


def loop_rank(rank, c):
    def r(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            rank(c)
        return time.perf_counter_ns() - t
    return r


def loop_send(send, c, drain):
    """rounds of ROUND sends to self; the drain between rounds is not timed"""
    def s(n):
        total = 0
        for _ in range(n // ROUND):
            t = time.perf_counter_ns()
            for _ in range(ROUND):
                assert send(c, 0, 0, payload, 16, 0) == 0
            total += time.perf_counter_ns() - t
            drain()
        return total
    return s


CDEF = """
struct shf_ctx;
struct shf_opts { unsigned version; const char *socket_path; const char *job;
  int rank, world; uint32_t ring_bytes; int delivery_thread; int timeout_ms; };
typedef void (*shf_deliver_fn)(void *, int, int, uint32_t, const void *, uint32_t);
void shf_opts_init(struct shf_opts *o);
int shf_open(const struct shf_opts *o, shf_deliver_fn fn, void *arg, struct shf_ctx **ctx_p);
int shf_send(struct shf_ctx *c, int dst, uint32_t type, const void *data, uint32_t len, unsigned flags);
int shf_poll(struct shf_ctx *c, int timeout_ms);
int shf_rank(const struct shf_ctx *c);
int shf_close(struct shf_ctx *c);
"""


# ---- ctypes
class Opts(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("socket_path", ctypes.c_char_p),
                ("job", ctypes.c_char_p), ("rank", ctypes.c_int), ("world", ctypes.c_int),
                ("ring_bytes", ctypes.c_uint32), ("delivery_thread", ctypes.c_int),
                ("timeout_ms", ctypes.c_int)]


def bench_ctypes():
    lib = ctypes.CDLL(libpath)
    CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_uint32,
                          ctypes.c_void_p, ctypes.c_uint32)
    cb = CB(lambda *a: None)
    o = Opts(); lib.shf_opts_init(ctypes.byref(o))
    o.rank, o.world, o.delivery_thread, o.job = 0, 1, 0, b"bind-ctypes"
    ctx = ctypes.c_void_p()
    assert lib.shf_open(ctypes.byref(o), cb, None, ctypes.byref(ctx)) == 0
    send, rank, c = lib.shf_send, lib.shf_rank, ctx
    send.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p,
                     ctypes.c_uint32, ctypes.c_uint]
    rank.argtypes = [ctypes.c_void_p]

    def drain():
        while lib.shf_poll(c, 0) > 0:
            pass
    r, s = loop_rank(rank, c), loop_send(send, c, drain)
    results["ctypes"] = (timed(r), timed(s))
    lib.shf_close(c)


def bench_cffi(api):
    import cffi
    ffi = cffi.FFI(); ffi.cdef(CDEF)
    if api:
        tmp = tempfile.mkdtemp(prefix="shf-cffi-")
        inc = os.environ.get("SHF_INCLUDE", os.path.join(os.path.dirname(__file__), "../../../include"))
        ffi.set_source("_shf_cffi_api", "#include <shuffle.h>", include_dirs=[inc],
                       library_dirs=[libdir] if libdir else [], libraries=[":libshuffle-client.so.1"],
                       extra_link_args=["-Wl,-rpath," + libdir] if libdir else [])
        ffi.compile(tmpdir=tmp, verbose=False)
        sys.path.insert(0, tmp)
        import _shf_cffi_api
        lib, ffi = _shf_cffi_api.lib, _shf_cffi_api.ffi
    else:
        lib = ffi.dlopen(libpath)
    o = ffi.new("struct shf_opts *"); lib.shf_opts_init(o)
    o.rank, o.world, o.delivery_thread = 0, 1, 0
    job = ffi.new("char[]", b"bind-cffi-api" if api else b"bind-cffi-abi"); o.job = job
    pp = ffi.new("struct shf_ctx **")
    cb = ffi.callback("void(void *, int, int, uint32_t, const void *, uint32_t)", lambda *a: None)
    assert lib.shf_open(o, cb, ffi.NULL, pp) == 0
    c = pp[0]
    send, rank = lib.shf_send, lib.shf_rank

    def drain():
        while lib.shf_poll(c, 0) > 0:
            pass
    r, s = loop_rank(rank, c), loop_send(send, c, drain)
    results["cffi-api" if api else "cffi-abi"] = (timed(r), timed(s))
    lib.shf_close(c)


def bench_ext():
    import shuffle
    with shuffle.Context(rank=0, world=1, job="bind-ext") as ctx:
        def r(n):
            t = time.perf_counter_ns()
            for _ in range(n):
                ctx.rank
            return time.perf_counter_ns() - t

        def s(n):
            send, total = ctx.send, 0
            for _ in range(n // ROUND):
                t = time.perf_counter_ns()
                for _ in range(ROUND):
                    send(0, payload)
                total += time.perf_counter_ns() - t
                ctx.recv_many()
            return total
        results["C extension"] = (timed(r), timed(s))


bench_ext()
bench_ctypes()
for api in (False, True):
    try:
        bench_cffi(api)
    except Exception as e:  # cffi not installed, no compiler
        print(f"cffi {'API' if api else 'ABI'} mode: not measured ({e})", file=sys.stderr)
# the loop alone (a Python for loop calling a no-op builtin)
def bare(n):
    f = len
    t = time.perf_counter_ns()
    for _ in range(n):
        f(payload)
    return time.perf_counter_ns() - t
results["(loop+len())"] = (timed(bare), float("nan"))
print(f"{'binding':<12} {'rank() ns/call':>15} {'send 16 B ns/call':>18}")
for k, (r, s) in results.items():
    print(f"{k:<12} {r:>15.0f} {s:>18.0f}")
