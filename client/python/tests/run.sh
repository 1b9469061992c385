#!/usr/bin/env bash
# client/python/tests/run.sh N SCRIPT [ARGS...]: bring up N simulated nodes
# (scripts/nodes, loopback), run SCRIPT with Debian's /usr/bin/python3 and
# the package from the build tree, tear the nodes down.  SCRIPT reads the
# nodes from $SHF_NODES_ENV (RUNDIR/env: SHF_NODES_SOCKET_I, _PID_I, ...);
# a script ending in .sh is run with bash instead (it then launches its own
# python3 processes).  Exit 77 (skip) from SCRIPT is passed on.
set -uo pipefail
T=python-$(basename "$2" .py)
# shellcheck source=scripts/lib-nodes.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/scripts/lib-nodes.sh"
n=$1 script=$2
shift 2
nodes_init "$T" || { echo "$T: cannot create a temporary directory" >&2; exit 1; }
nodes_up -n "$n" --lifetime 300 || { echo "$T: scripts/nodes up -n $n failed" >&2; exit 1; }
export SHF_NODES_ENV=$NODES_DIR/env
export SHF_SOCKET=$SHF_NODES_SOCKET_1
export PYTHONPATH=${SHF_PYTHONPATH:?}${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
# a sanitizer build (SHF_PY_PRELOAD, set by meson): every python3 started
# from here (children too) goes through a wrapper that preloads the runtime
if [ -n "${SHF_PY_PRELOAD-}" ]; then
  w=$NODES_TMP/python3
  printf '#!/bin/sh\nexport LD_PRELOAD=%q ASAN_OPTIONS=detect_leaks=0:abort_on_error=1\nexec %q "$@"\n' \
    "$SHF_PY_PRELOAD" "${SHF_PYTHON:-/usr/bin/python3}" > "$w"
  chmod +x "$w"
  export SHF_PYTHON=$w
fi
case $script in
  *.sh) bash "$script" "$@" ;;
  *) "${SHF_PYTHON:-/usr/bin/python3}" "$script" "$@" ;;
esac
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || nodes_logs 20
exit "$rc"
