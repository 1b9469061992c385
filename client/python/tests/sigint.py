# SPDX-License-Identifier: MIT
"""Ctrl-C in a blocking call: a child blocked in recv(timeout=-1), then in
an epoch the other rank has not entered, gets SIGINT; each call raises
KeyboardInterrupt within a slice and the context stays usable (the
interrupted epoch completes when called again)."""
import os, signal, subprocess, sys, time
from common import check, done

CHILD = r'''
import sys, threading, numpy as np, shuffle
sys.path.insert(0, sys.argv[1])
from common import open_ranks, job
def say(s): print(s, flush=True)
with shuffle.Context(rank=0, world=1, job=job("int1")) as c:
    say("ready-recv")
    try:
        c.recv(timeout=-1)
        say("recv returned"); sys.exit(1)
    except KeyboardInterrupt:
        say("interrupted-recv")
    c.send(0, b"after")
    m = c.recv(timeout=5)
    say("usable" if m and m.data == b"after" else f"broken {m}")
a, b = open_ranks(shuffle, 2, job("int2"))
a.send(1, b"x")
say("ready-epoch")
try:
    a.epoch(timeout=-1)               # rank 1 never enters: blocks
    say("epoch returned"); sys.exit(1)
except KeyboardInterrupt:
    say("interrupted-epoch")
t = threading.Thread(target=b.epoch, kwargs={"timeout": 20})
t.start()
a.epoch(timeout=20)                   # resumes the interrupted epoch
t.join()
m = b.recv()
say("epoch-resumed" if m and m.data == b"x" else f"epoch broken {m}")
a.close(); b.close()
say("closed")
'''

p = subprocess.Popen([sys.executable, "-c", CHILD, os.path.dirname(os.path.abspath(__file__))],
                     stdout=subprocess.PIPE, text=True)
lines = []


def expect(word, then_signal):
    while True:
        line = p.stdout.readline().strip()
        if not line:
            check(False, f"child ended before {word!r}: {lines}")
            return False
        lines.append(line)
        if line == word:
            break
    if then_signal:
        time.sleep(0.5)   # well inside the blocking call
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        return t0
    return True


t0 = expect("ready-recv", True)
if t0:
    expect("interrupted-recv", False)
    check(time.monotonic() - t0 < 2, "recv interrupted promptly")
    expect("usable", False)
    t0 = expect("ready-epoch", True)
    if t0:
        expect("interrupted-epoch", False)
        check(time.monotonic() - t0 < 2, "epoch interrupted promptly")
        expect("epoch-resumed", False)
        expect("closed", False)
rc = p.wait(timeout=60)
check(rc == 0, f"child exit {rc}; output {lines}")
done("sigint")
