# SPDX-License-Identifier: MIT
"""launch.py [--torch] NPROC SCRIPT [ARGS...]: run NPROC copies of SCRIPT
as the ranks of one job, spread over the simulated nodes of $SHF_NODES_ENV
(rank i on node 1 + i * nodes // NPROC), with SHF_RANK/SHF_WORLD/SHF_JOB,
or with --torch PyTorch's env:// variables (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT).  Exit 0 when every rank exits 0."""
import os, socket, subprocess, sys
from common import nodes, job

args = sys.argv[1:]
torch = args[0] == "--torch"
if torch:
    args = args[1:]
nproc, script, rest = int(args[0]), args[1], args[2:]
env = nodes()
nn = int(env["SHF_NODES_N"])
j = job("ex")
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
procs = []
for r in range(nproc):
    node = 1 + r * nn // nproc
    e = dict(os.environ, SHF_SOCKET=env[f"SHF_NODES_SOCKET_{node}"])
    if torch:
        e.update(RANK=str(r), WORLD_SIZE=str(nproc), LOCAL_RANK=str(r),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    else:
        e.update(SHF_RANK=str(r), SHF_WORLD=str(nproc), SHF_JOB=j)
    procs.append(subprocess.Popen([sys.executable, script] + rest, env=e))
rc = 0
for r, p in enumerate(procs):
    try:
        c = p.wait(timeout=240)
    except subprocess.TimeoutExpired:
        p.kill()
        c = "timeout"
    if c != 0:
        print(f"launch: rank {r} of {script}: exit {c}", file=sys.stderr)
        rc = 1
sys.exit(rc)
