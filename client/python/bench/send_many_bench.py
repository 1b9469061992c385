#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""send_many throughput from numpy, the Python twin of
`shuffle-bench --mode shuffle --poll -s 16 -p uniform`: each rank sends N
records of SIZE bytes to uniformly random ranks (the destinations drawn
before the clock starts), CHUNK records per send_many() call, takes what
arrived with recv_many() between calls, then epoch() and a final
recv_many().  Checks that each rank received exactly what was sent to it
(counts exchanged through shuffle after the run).  Rank 0 prints one line:
messages/s over the job = world * N / the slowest rank's time.

Launched like the C benchmark (mpirun through scripts/nodes mpirun, or any
launcher shuffle knows):
    scripts/nodes mpirun --dir D -npernode 2 -x PYTHONPATH -- \
        /usr/bin/python3 send_many_bench.py [N] [SIZE] [CHUNK]
"""
import sys, time
import numpy as np
import shuffle

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 16
CHUNK = int(sys.argv[3]) if len(sys.argv) > 3 else 65536

with shuffle.Context(timeout=120) as ctx:
    rng = np.random.default_rng(ctx.rank + 1)
    dst = rng.integers(0, ctx.world, N).astype(np.int32)
    recs = np.zeros((N, SIZE), np.uint8)
    recs[:, :4] = np.arange(N, dtype=np.uint32).view(np.uint8).reshape(N, 4)
    got, ctl = 0, []
    ctx.epoch()                                      # start together

    def take(b):
        # a faster rank's counts (type 1, 2) may come before our last take
        global got
        got += int(np.count_nonzero(b.type == 0))
        if np.any(b.type != 0):
            ctl.append(b)
    t0 = time.perf_counter()
    for i in range(0, N, CHUNK):
        ctx.send_many(dst[i:i + CHUNK], recs[i:i + CHUNK])
        take(ctx.recv_many())
    ctx.epoch()
    take(ctx.recv_many())
    dt = time.perf_counter() - t0
    # check: what each rank sent to me == what I got
    sent_to = np.bincount(dst, minlength=ctx.world).astype(np.int64)
    ctx.send_many(np.arange(ctx.world), sent_to, type=1)
    ctx.send_many([0], np.array([dt]), type=2)
    ctx.epoch()
    take(ctx.recv_many())
    expect = sum(int(np.frombuffer(b.payload(i), np.int64)[0])
                 for b in ctl for i in np.flatnonzero(b.type == 1))
    ok = expect == got
    if not ok:
        print(f"rank {ctx.rank}: got {got} records, expected {expect}", file=sys.stderr)
    if ctx.rank == 0:
        times = [float(np.frombuffer(b.payload(i), np.float64)[0])
                 for b in ctl for i in np.flatnonzero(b.type == 2)]
        tmax = max(times)
        print(f"send_many_bench: world {ctx.world}, {N} x {SIZE} B per rank, chunk {CHUNK}: "
              f"{ctx.world * N / tmax / 1e6:.2f} M msgs/s (slowest rank {tmax:.3f} s)")
    ctx.epoch()
    sys.exit(0 if ok else 1)
