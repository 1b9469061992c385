# SPDX-License-Identifier: MIT
"""Two simulated nodes, 2 processes each: every rank sends a mixed-size
batch to every rank with send_many (sequence numbers in the payload),
epoch(), and checks each record arrived exactly once, in order per
source; node_info() sees 2 nodes.  Then node 2's daemon is killed: a
rank on node 1 that sent to node 2 gets NodeDown from flush()."""
import os, signal, subprocess, sys, time
import numpy as np
from common import check, done, nodes, job

WORLD, PER = 4, 200
env = nodes()
j = job("n2")
CHILD = r'''
import os, sys, numpy as np, shuffle
r, world, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(r)
fail = lambda m: (print(f"rank {r}: {m}", flush=True), sys.exit(1))
with shuffle.Context(timeout=60) as c:                  # SHF_RANK/SHF_WORLD/SHF_JOB
    if (c.rank, c.world) != (r, world): fail(f"rank/world {c.rank}/{c.world}")
    ni = c.node_info()
    if ni.nodes != 2 or ni.node_counts != [2, 2] or ni.local_count != 2: fail(f"node_info {ni}")
    dst = np.repeat(np.arange(world), per)
    seq = np.tile(np.arange(per), world)
    sizes = 8 + (seq % 5) * 100                         # 8 .. 408 bytes
    offs = np.concatenate([[0], np.cumsum(sizes)])
    blob = np.zeros(offs[-1], np.uint8)
    for i in range(len(dst)):                           # header: src, seq
        blob[offs[i]:offs[i] + 8] = np.array([r, seq[i]], np.int32).view(np.uint8)
    c.send_many(dst, blob.tobytes(), type=r, offsets=offs)
    c.epoch()
    b = c.recv_many()
    if len(b) != world * per: fail(f"got {len(b)} records, want {world * per}")
    hdr = np.stack([np.frombuffer(b.payload(i)[:8], np.int32) for i in range(len(b))])
    for s in range(world):
        mine = hdr[hdr[:, 0] == s][:, 1]
        if not np.array_equal(mine, np.arange(per)): fail(f"from {s}: seq {mine[:10]}...")
    if not np.array_equal(np.sort(b.src), np.repeat(np.arange(world), per)): fail("src")
    if not np.array_equal(b.type, b.src.astype(np.uint32)): fail("type")
    if not np.array_equal(b.lengths, 8 + (hdr[:, 1] % 5) * 100): fail("lengths")
    print(f"rank {r} ok", flush=True)
    c.epoch()                                            # everyone checked
'''
procs = []
for r in range(WORLD):
    node = 1 + r // 2
    e = dict(os.environ, SHF_RANK=str(r), SHF_WORLD=str(WORLD), SHF_JOB=j,
             SHF_SOCKET=env[f"SHF_NODES_SOCKET_{node}"])
    procs.append(subprocess.Popen([sys.executable, "-c", CHILD, str(r), str(WORLD), str(PER)], env=e))
for r, p in enumerate(procs):
    check(p.wait(timeout=120) == 0, f"rank {r} failed")

# node loss: rank 0 on node 1, rank 1 on node 2; node 2's daemon killed
import shuffle
from common import open_ranks
j = job("down")
a, b = open_ranks(shuffle, 2, j, sockets=[env["SHF_NODES_SOCKET_1"], env["SHF_NODES_SOCKET_2"]],
                  timeout=30)
os.kill(int(env["SHF_NODES_PID_2"]), signal.SIGKILL)
time.sleep(0.2)
try:
    for _ in range(50):
        a.send(1, b"into the void")
    a.flush("remote", timeout=30)
    check(False, "flush after node loss returned")
except shuffle.NodeDown as e:
    check(e.errno == 112, f"NodeDown errno {e.errno}")
    check(a.stats()["dropped_down"] > 0, f"dropped_down {a.stats()}")
except shuffle.Error as e:
    check(False, f"flush after node loss: {type(e).__name__} {e}")
a.close()
try:
    b.close()
except shuffle.Error:
    pass       # its daemon is gone: close reports it, never crashes
done("nodes2")
