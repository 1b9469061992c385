# SPDX-License-Identifier: MIT
# tests/interop/torch-client.py - PyTorch's own TCPStore client
# (is_master=False) against shuffled --store-listen: set, get, add,
# compare_set, delete_key, num_keys, wait with timeout and wake-up, and
# the world_size handshake; values checked; the daemon stops cleanly.
import datetime
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import check, env, free_port, need_torch, wait_port  # noqa: E402

dist = need_torch()
shuffled = env("SHF_TEST_SHUFFLED")
tmp = tempfile.mkdtemp(prefix="shf-interop-")
port = free_port()
log = os.path.join(tmp, "log")
d = subprocess.Popen([shuffled, "--runtime-dir", os.path.join(tmp, "run"), "--node-name",
                      "interop", "--rendezvous", "none", "--log-file", log,
                      f"--store-listen=127.0.0.1:{port}"])
try:
    wait_port(port)
    T = datetime.timedelta
    s = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=T(seconds=10))
    s.set("k1", "v1")
    check(s.get("k1") == b"v1", "get k1")
    s.set("bin", bytes([0, 1, 2, 255]))
    check(s.get("bin") == bytes([0, 1, 2, 255]), "binary value")
    check(s.add("ctr", 5) == 5, "add new")
    check(s.add("ctr", -7) == -2, "add negative")
    check(s.get("ctr") == b"-2", "counter stored as decimal text")
    check(s.compare_set("k1", "nope", "v2") == b"v1", "compare_set mismatch")
    check(s.compare_set("k1", "v1", "v2") == b"v2", "compare_set match")
    check(s.get("k1") == b"v2", "compare_set stored")
    check(s.compare_set("fresh", "", "new") == b"new", "compare_set creates on empty")
    check(s.compare_set("absent", "x", "y") == b"x", "compare_set missing key")
    check(s.num_keys() == 4, f"num_keys {s.num_keys()}")
    check(s.delete_key("fresh") is True, "delete existing")
    check(s.delete_key("fresh") is False, "delete missing")
    check(s.num_keys() == 3, "num_keys after delete")

    # wake-up: another client sets the key while we wait
    def later():
        o = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=T(seconds=10))
        time.sleep(0.3)
        o.set("late", "here")
    th = threading.Thread(target=later)
    th.start()
    t0 = time.time()
    s.wait(["late"], T(seconds=10))
    check(time.time() - t0 >= 0.2, "wait returned before the key was set")
    check(s.get("late") == b"here", "value after wait")
    th.join()

    # timeout (last: torch 1.13 cannot cancel a wait, the connection is done)
    t0 = time.time()
    try:
        s.wait(["never"], T(milliseconds=300))
        check(False, "wait on a missing key returned")
    except RuntimeError as e:
        dt = time.time() - t0
        check(0.25 <= dt < 3, f"wait timeout took {dt:.2f} s")
        check("imeout" in str(e), f"wait error: {e}")

    # the world_size handshake: each worker ADDs 1 to "init/" (unprefixed)
    t0 = time.time()
    w = [dist.TCPStore("127.0.0.1", port, world_size=2, is_master=False,
                       timeout=T(seconds=10)) for _ in range(2)]
    check(time.time() - t0 < 5, f"world_size clients took {time.time() - t0:.1f} s")
    check(w[1].num_keys() == 5, f"num_keys {w[1].num_keys()} with init/")
    del w, s
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=20) == 0, "shuffled exit status")
    text = open(log).read()
    check("store: listening on 127.0.0.1:" in text, "store start logged")
    check("cut off" not in text, "no client was cut off:\n" + text)
    print("interop torch-client: ok")
finally:
    if d.poll() is None:
        d.kill()
        d.wait()
