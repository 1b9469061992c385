#!/usr/bin/env bash
# Run an mpi4py example as one MPI job over the simulated nodes of
# $SHF_NODES_ENV (client/python/tests/run.sh): 2 ranks per node.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
dir=$(dirname "$SHF_NODES_ENV")
exec "$top/scripts/nodes" mpirun --dir "$dir" -npernode 2 --timeout 120 -x PYTHONPATH \
  -x PYTHONDONTWRITEBYTECODE -- "${SHF_PYTHON:-/usr/bin/python3}" "$@"
