# SPDX-License-Identifier: MIT
# tests/interop/torch-server.py - PyTorch serves a TCPStore (is_master=True)
# and our blocking client (daemon/rdv/store_client.c, in store-cli) uses it:
# set, get, add, compare_set, check, delete, num_keys, wait with wake-up
# and with timeout.  Python checks what the C side wrote and writes what it
# waits for.
import datetime
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import check, env, free_port, need_torch  # noqa: E402

dist = need_torch()
cli = env("SHF_TEST_STORE_CLI")
port = free_port()
T = datetime.timedelta
master = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                       timeout=T(seconds=30))


def feeder():
    # the C side says it is waiting; answer with the key it waits for
    m = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=T(seconds=30))
    m.wait(["c/ready"])
    time.sleep(0.3)
    m.set("py/late", "42")


th = threading.Thread(target=feeder)
th.start()
r = subprocess.run([cli, "127.0.0.1", str(port)], timeout=60)
th.join()
check(r.returncode == 0, f"store-cli exit status {r.returncode}")
# what the C client left behind, seen through torch
check(master.get("c/k") == b"world", "value written by compare_set from C")
check(master.get("c/ctr") == b"7", "counter added from C")
check(master.check(["c/ctr"]) if hasattr(master, "check") else True, "check")
print("interop torch-server: ok")
