#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Data-parallel PyTorch training with a global shuffle of the samples
every epoch through shuffle.

Started with env:// variables (torchrun, or by hand):
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2 RANK=0 ./torch_shuffle.py & ...

shuffle.Context() takes rank and world from RANK/WORLD_SIZE and the job's
name from MASTER_ADDR:MASTER_PORT (the C library's PyTorch launcher
support).  Each epoch every rank sends the ids of the samples it holds to
random ranks with one send_many(), calls epoch(), and trains on the ids it
received (DistributedDataParallel over gloo averages the gradients).  It
checks, with an all_reduce of per-sample counts, that every sample was
seen exactly once in the epoch.
"""
import os, sys
import numpy as np
import torch
import torch.distributed as dist
import shuffle

SAMPLES, EPOCHS, BATCH = 4096, 3, 64

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
# a synthetic regression data set every rank can index: y = x @ w + noise
X = torch.randn(SAMPLES, 8)
Y = X @ torch.arange(1.0, 9.0) + 0.01 * torch.randn(SAMPLES)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)

ok = True
with shuffle.Context() as ctx:
    assert (ctx.rank, ctx.world) == (rank, world), (ctx.rank, ctx.world, rank, world)
    held = np.arange(rank, SAMPLES, world, dtype=np.int64)      # this rank's ids
    rng = np.random.default_rng(1000 + rank)
    for epoch in range(EPOCHS):
        ctx.send_many(rng.integers(0, world, len(held)), held, type=epoch)
        ctx.epoch()                                  # every id has reached its rank
        b = ctx.recv_many()
        if not np.all(b.type == epoch):
            ok = False
        held = b.array(np.int64)                     # this epoch's samples
        rng.shuffle(held)

        seen = torch.zeros(SAMPLES, dtype=torch.int64)
        seen[torch.from_numpy(held)] += 1
        dist.all_reduce(seen)                        # summed over the ranks
        once = bool(torch.all(seen == 1))
        ok &= once
        # DDP needs the same number of steps on every rank
        steps = torch.tensor([len(held) // BATCH])
        dist.all_reduce(steps, op=dist.ReduceOp.MIN)
        loss = torch.tensor(0.0)
        for s in range(int(steps)):
            idx = torch.from_numpy(held[s * BATCH:(s + 1) * BATCH])
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(X[idx]).squeeze(1), Y[idx])
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch}: {len(held)} samples here, every sample once: {once}, "
                  f"loss {loss.item():.3f}", flush=True)
dist.destroy_process_group()
sys.exit(0 if ok else 1)
