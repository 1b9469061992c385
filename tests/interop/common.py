# SPDX-License-Identifier: MIT
# tests/interop/common.py - what the interop scripts share.
import os
import socket
import sys


def need_torch():
    """Import torch.distributed or skip (exit 77) saying why."""
    try:
        import torch.distributed as dist  # noqa: F401
        return dist
    except Exception as e:  # ImportError, or a broken install
        print(f"SKIP: cannot import torch with {sys.executable}: {e} "
              "(scripts/install-deps installs python3-torch)", file=sys.stderr)
        sys.exit(77)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=10.0):
    import time
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)


def env(name):
    v = os.environ.get(name)
    if not v:
        print(f"SKIP: {name} is not set (run through meson)", file=sys.stderr)
        sys.exit(77)
    return v
