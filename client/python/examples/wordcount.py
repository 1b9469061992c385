#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Distributed word count with shuffle.

Each rank reads its share of the lines, sends every word to the rank that
owns it (a hash of the word), and counts what it receives.  Rank and world
come from the launcher (SHF_RANK/SHF_WORLD, mpirun, srun, torchrun):

    for r in 0 1 2 3; do SHF_RANK=$r SHF_WORLD=4 SHF_JOB=wc ./wordcount.py FILE & done; wait

Without FILE it counts a generated text and checks the result against a
count done alone (exit 1 on a mismatch).
"""
import collections, sys, zlib
import numpy as np
import shuffle


def owner(word: bytes, world: int) -> int:
    return zlib.crc32(word) % world


def text_lines():
    if len(sys.argv) > 1:
        with open(sys.argv[1], "rb") as f:
            return f.read().splitlines()
    rng = np.random.default_rng(42)
    vocab = [f"w{i}".encode() * (1 + i % 3) for i in range(500)]
    return [b" ".join(vocab[j] for j in rng.zipf(1.5, 12) % 500) for _ in range(4000)]


with shuffle.Context() as ctx:
    lines = text_lines()
    mine = lines[ctx.rank::ctx.world]
    words = [w for line in mine for w in line.split()]
    # one batch: words as bytes with offsets, each to its owner
    dst = np.fromiter((owner(w, ctx.world) for w in words), np.int32, len(words))
    offs = np.zeros(len(words) + 1, np.int64)
    np.cumsum([len(w) for w in words], out=offs[1:])
    ctx.send_many(dst, b"".join(words), offsets=offs)
    ctx.epoch()                                  # every word has reached its owner
    batch = ctx.recv_many()
    # A faster rank may already have sent its results (types 1, 2) to rank
    # 0: they can be in this batch too.  The type tells the phases apart.
    words_in = np.flatnonzero(batch.type == 0)
    counts = collections.Counter(batch.payload(i) for i in words_in)
    early = batch

    # the top words of every rank to rank 0: "count word" records
    top = [f"{n} ".encode() + w for w, n in counts.most_common(5)]
    if top:
        o = np.concatenate([[0], np.cumsum([len(t) for t in top])])
        ctx.send_many(np.zeros(len(top), np.int32), b"".join(top), type=1, offsets=o)
    # and every count, to check the total (rank 0 compares with a serial count)
    if len(sys.argv) == 1:
        recs = np.array([(zlib.crc32(w), n) for w, n in counts.items()], np.int64).reshape(-1, 2)
        ctx.send_many(np.zeros(len(recs), np.int32), recs.view(np.uint8).reshape(len(recs), 16),
                      type=2)
    ctx.epoch()
    if ctx.rank == 0:
        late = ctx.recv_many()
        results = [(b, i) for b in (early, late) for i in np.flatnonzero(b.type != 0)]
        tops = sorted((b.payload(i) for b, i in results if b.type[i] == 1),
                      key=lambda s: -int(s.split()[0]))
        print("top words:", ", ".join(t.decode() for t in tops[:5]))
        if len(sys.argv) == 1:
            got = collections.Counter()
            for b, i in results:
                if b.type[i] != 2:
                    continue
                h, n = np.frombuffer(b.payload(i), np.int64)
                got[int(h)] += int(n)
            want = collections.Counter(zlib.crc32(w) for line in lines for w in line.split())
            if got != want:
                print("wordcount: MISMATCH with the serial count", file=sys.stderr)
                sys.exit(1)
            print(f"wordcount: {sum(want.values())} words, {len(want)} distinct, "
                  f"{ctx.world} ranks: matches the serial count")
