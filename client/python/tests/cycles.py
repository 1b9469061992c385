# SPDX-License-Identifier: MIT
"""Open/close cycles of a Context do not leak: RSS after the warm-up stays
flat (within 2 MiB) across N cycles (default 300; the benchmark runs
10,000: `cycles.py 10000`), each cycle sending and receiving a record."""
import os, sys
import shuffle
from common import check, done, job

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def cycle(i):
    with shuffle.Context(rank=0, world=1, job=f"{base}-{i}") as c:
        c.send(0, b"x" * 64)
        c.epoch()
        check(len(c.recv_many()) == 1, f"cycle {i}: record lost")


base = job("cyc")
warm = max(N // 10, 20)
for i in range(warm):
    cycle(i)
r0 = rss_kb()
for i in range(warm, warm + N):
    cycle(i)
r1 = rss_kb()
print(f"cycles: {N} open/close cycles after {warm} warm-up: RSS {r0} kB -> {r1} kB "
      f"({r1 - r0:+d} kB)")
if "libasan" in os.environ.get("LD_PRELOAD", ""):
    # ASan keeps freed memory in its quarantine: RSS says nothing here (the
    # cycles still ran under the sanitizers)
    print("cycles: under AddressSanitizer: RSS not judged")
else:
    check(r1 - r0 < 2048, f"RSS grew by {r1 - r0} kB over {N} cycles")
done("cycles")
