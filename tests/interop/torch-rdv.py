# SPDX-License-Identifier: MIT
# tests/interop/torch-rdv.py - the tcp:// rendezvous against PyTorch's own
# store: a TCPStore(is_master=True) served by this interpreter, two
# shuffled daemons (loopback binds 127.X.Y.1 and .2) started with
# --rendezvous tcp://127.0.0.1:PORT meet through it (ids 0 and 1 in
# start order; Python counts the keys they published); each sees
# the other up; a 4-rank job (tests/node tclient traffic, 2 ranks per
# daemon through SHF_SOCKET) runs with exact counts; the daemons stop
# cleanly.
import datetime
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import check, env, free_port, need_torch  # noqa: E402

dist = need_torch()
shuffled = env("SHF_TEST_SHUFFLED")
ctl = env("SHF_TEST_SHUFFLECTL")
tclient = env("SHF_TEST_TCLIENT")
T = datetime.timedelta
t_start = time.time()


def note(msg):
    print(f"interop torch-rdv: {msg} [{(time.time() - t_start) * 1000:.0f} ms]", flush=True)


tmp = tempfile.mkdtemp(prefix="shfrdv-", dir="/tmp")
sync = os.path.join(tmp, "sync")
os.mkdir(sync)
port = free_port()
master = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                       timeout=T(seconds=30))
net = f"127.{random.randint(20, 219)}.{random.randint(1, 250)}"
daemons = []
ranks = []


def sock(i):
    return os.path.join(tmp, f"n{i}", "shuffled.sock")


def ctl_json(i, what):
    r = subprocess.run([ctl, "-s", sock(i), what, "--json"], capture_output=True, text=True,
                       timeout=10)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)


def until(what, cond, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        for i, d in enumerate(daemons, 1):
            if d.poll() is not None:
                print(open(os.path.join(tmp, f"n{i}.log")).read()[-3000:], file=sys.stderr)
                check(False, f"daemon n{i} exited ({d.returncode}) while waiting for {what}")
        time.sleep(0.05)
    check(False, f"timed out ({timeout} s) waiting for {what}")


def start(i):
    os.makedirs(os.path.join(tmp, f"n{i}"), exist_ok=True)
    out = open(os.path.join(tmp, f"n{i}.out"), "w")
    d = subprocess.Popen([shuffled, "--runtime-dir", os.path.join(tmp, f"n{i}"),
                          "--node-name", f"n{i}", "--log-file", os.path.join(tmp, f"n{i}.log"),
                          "--rendezvous", f"tcp://127.0.0.1:{port}", "--bind", f"{net}.{i}",
                          "--peer-timeout-ms", "2000", "--heartbeat-ms", "200"],
                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    daemons.append(d)
    t0 = time.time()
    until(f"n{i} to answer", lambda: ctl_json(i, "status") is not None)
    st = ctl_json(i, "status")
    check(st.get("node_id") == i - 1, f"n{i} is node id {st.get('node_id')}, expected {i - 1}")
    note(f"n{i} up as node id {i - 1} after {(time.time() - t0) * 1000:.0f} ms")


def peer_state(i, node):
    p = ctl_json(i, "peers")
    if not p:
        return None
    for e in p.get("peers", []):
        if e.get("node") == node:
            return e.get("state")
    return None


try:
    # one after the other: a node claims the next free id when it arrives.
    # What they wrote is counted through PyTorch's client: its get() puts
    # "/" before every key, the daemons' keys ("shuffle/...") have none, so
    # torch cannot read them by name.  n1: shuffle/next, shuffle/id/n1,
    # shuffle/node/0; n2 adds shuffle/id/n2, shuffle/node/1.
    check(master.num_keys() == 0, f"{master.num_keys()} keys before any daemon")
    start(1)
    check(master.num_keys() == 3, f"{master.num_keys()} keys after n1, expected 3")
    start(2)
    check(master.num_keys() == 5, f"{master.num_keys()} keys after n2, expected 5")
    note("the store holds 5 keys (next, 2 ids, 2 node records)")
    t0 = time.time()
    until("n1 and n2 to see each other up",
          lambda: peer_state(1, 1) == "up" and peer_state(2, 0) == "up")
    note(f"n1 and n2 see each other up after {(time.time() - t0) * 1000:.0f} ms")

    # the job: 4 ranks, 2 per daemon
    W = 4
    t0 = time.time()
    for r in range(W):
        e = dict(os.environ, SHF_SOCKET=sock(r // 2 + 1), SHF_JOB="torchrdv",
                 SHF_WORLD=str(W), SHF_RANK=str(r), SHF_TEST_SYNC=sync)
        log = open(os.path.join(tmp, f"rank{r}.log"), "w")
        ranks.append(subprocess.Popen([tclient, "traffic", "n=2000", "rounds=3", "maxlen=400",
                                       "hold=release", "timeout=40000"],
                                      env=e, stdout=log, stderr=subprocess.STDOUT))
    end = time.time() + 60
    while not all(os.path.exists(os.path.join(sync, f"held.{r}")) for r in range(W)):
        bad = [r for r, p in enumerate(ranks) if p.poll() not in (None, 0)]
        if bad or time.time() > end:
            for r in range(W):
                print(f"--- rank {r}:\n" + open(os.path.join(tmp, f"rank{r}.log")).read()[-2000:],
                      file=sys.stderr)
            check(False, f"ranks {bad} failed" if bad else "the ranks never finished")
        time.sleep(0.02)
    open(os.path.join(sync, "release"), "w").close()
    sent = got = 0
    for r, p in enumerate(ranks):
        rc = p.wait(timeout=30)
        text = open(os.path.join(tmp, f"rank{r}.log")).read()
        check(rc == 0, f"rank {r} exit status {rc}:\n{text[-2000:]}")
        for line in text.splitlines():
            if line.startswith(f"rank {r}: sent "):
                w = line.split()
                sent += int(w[3])
                got += int(w[5])
    check(sent > 0 and sent == got, f"{sent} messages sent, {got} delivered")
    note(f"4-rank job across n1 and n2: exact ({sent} messages, 3 epochs) "
         f"in {(time.time() - t0) * 1000:.0f} ms")

    for i, d in enumerate(daemons, 1):
        d.send_signal(signal.SIGTERM)
    for i, d in enumerate(daemons, 1):
        check(d.wait(timeout=20) == 0, f"n{i} exit status {d.returncode}")
        text = open(os.path.join(tmp, f"n{i}.log")).read()
        check(" ERR: " not in text,
              f"n{i} logged an error:\n{text[-3000:]}")
    print("interop torch-rdv: ok")
finally:
    for p in ranks + daemons:
        if p.poll() is None:
            p.kill()
            p.wait()
    if os.environ.get("NODES_KEEP"):
        print(f"interop torch-rdv: kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
