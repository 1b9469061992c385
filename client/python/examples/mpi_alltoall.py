#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""shuffle from an mpi4py program: rank and size come from the
communicator; MPI is used only to check the result, never to move data.

    mpirun -np 4 ./mpi_alltoall.py

Every rank sends 10,000 records of a structured dtype (source, sequence,
value) to random ranks in one send_many() call, then epoch(); each rank
checks what it got against what the others say they sent
(MPI_Alltoall of the counts) and that each source's sequence numbers
arrive in order.
"""
import sys
import numpy as np
from mpi4py import MPI
import shuffle

comm = MPI.COMM_WORLD
N = 10_000
rec = np.dtype([("src", "<i4"), ("seq", "<i4"), ("value", "<f8")])

with shuffle.Context(rank=comm.rank, world=comm.size) as ctx:
    rng = np.random.default_rng(comm.rank)
    dst = rng.integers(0, comm.size, N)
    out = np.zeros(N, rec)
    out["src"] = comm.rank
    out["seq"] = np.arange(N)
    out["value"] = rng.random(N)
    ctx.send_many(dst, out, type=comm.rank)
    ctx.epoch()
    got = ctx.recv_many().array(rec)

    sent_to = np.bincount(dst, minlength=comm.size).astype(np.int64)
    expect = np.empty(comm.size, np.int64)
    comm.Alltoall(sent_to, expect)                 # what each rank sent me
    have = np.bincount(got["src"], minlength=comm.size)
    ok = np.array_equal(have, expect)
    for s in range(comm.size):
        seq = got["seq"][got["src"] == s]
        ok &= bool(np.all(np.diff(seq) > 0))       # in order per source
    ok = comm.allreduce(ok, op=MPI.LAND)
    if comm.rank == 0:
        print(f"mpi_alltoall: {comm.size} ranks x {N} records: "
              f"{'every record once, in order' if ok else 'MISMATCH'}")
    sys.exit(0 if ok else 1)
