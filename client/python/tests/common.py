# SPDX-License-Identifier: MIT
"""What the Python tests share: the simulated nodes (RUNDIR/env written by
scripts/nodes), checks that report the failing line, and a way to open
several ranks of one job in one process (threads: shf_open waits for the
whole world)."""
import os, shlex, sys, threading, traceback, uuid


def nodes():
    """SHF_NODES_* of $SHF_NODES_ENV as a dict."""
    env = {}
    with open(os.environ["SHF_NODES_ENV"]) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = shlex.split(v)[0] if v else ""
    return env


def socket(node=1):
    return nodes()[f"SHF_NODES_SOCKET_{node}"]


def job(tag):
    return f"py-{tag}-{uuid.uuid4().hex[:8]}"


FAILS = []


def check(cond, what):
    if not cond:
        fr = traceback.extract_stack(limit=2)[0]
        msg = f"FAIL {os.path.basename(fr.filename)}:{fr.lineno}: {what}"
        print(msg, file=sys.stderr, flush=True)
        FAILS.append(msg)


def raises(exc, fn, *a, **kw):
    """fn(*a, **kw) must raise exc; returns the exception (or None)."""
    try:
        fn(*a, **kw)
    except exc as e:
        return e
    except BaseException as e:  # noqa: BLE001 - report any other outcome
        fr = traceback.extract_stack(limit=2)[0]
        FAILS.append(f"line {fr.lineno}: expected {exc.__name__}, got {type(e).__name__}: {e}")
        print(FAILS[-1], file=sys.stderr, flush=True)
        return None
    fr = traceback.extract_stack(limit=2)[0]
    FAILS.append(f"line {fr.lineno}: expected {exc.__name__}, nothing raised")
    print(FAILS[-1], file=sys.stderr, flush=True)
    return None


def open_ranks(shuffle, world, jobname, sockets=None, **kw):
    """Open ranks 0..world-1 of one job concurrently; list of Contexts."""
    out, errs = [None] * world, []

    def one(r):
        try:
            out[r] = shuffle.Context(rank=r, world=world, job=jobname,
                                     socket=(sockets[r] if sockets else None), **kw)
        except BaseException as e:  # noqa: BLE001
            errs.append(e)
    ts = [threading.Thread(target=one, args=(r,)) for r in range(world)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        for c in out:
            if c:
                c.close()
        raise errs[0]
    return out


def in_threads(fns):
    """Run the callables concurrently (collectives); re-raise the first error."""
    res, errs = [None] * len(fns), []

    def one(i):
        try:
            res[i] = fns[i]()
        except BaseException as e:  # noqa: BLE001
            errs.append(e)
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(fns))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise errs[0]
    return res


def done(name):
    if FAILS:
        print(f"{name}: {len(FAILS)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: ok")
    sys.exit(0)
