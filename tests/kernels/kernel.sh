#!/usr/bin/env bash
# tests/kernels/kernel.sh NODES PER_NODE KERNEL [ARGS...] - one kernel of
# examples/kernels at a small size, every implementation (shuffle,
# shuffle-more, shuffle-batch, mpi; or $KERNEL_IMPLS), on NODES loopback simulated nodes
# x PER_NODE ranks (scripts/nodes mpirun): each must exit 0 and print a
# JSON line with "validation":"ok".  Validation only: never a speed.
T=kernel-$3
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/../multi/common.sh"
n=$1 per=$2 kernel=$3
shift 3
bin=${SHF_TEST_KERNELS:-$NODES_BUILD/examples/kernels}/kernel-$kernel
t_need "$bin"
command -v mpirun >/dev/null || t_skip "mpirun is not installed"
t_up --mode loopback -n "$n"
export NODES=$n
for impl in ${KERNEL_IMPLS:-shuffle shuffle-more shuffle-batch mpi}; do
  out=$(nodes mpirun -npernode "$per" --timeout 60 -x NODES -- "$bin" --impl "$impl" "$@" \
        2>"$NODES_TMP/logs/$impl.err")
  rc=$?
  line=$(printf '%s\n' "$out" | grep '^{' | tail -n 1)
  if [ "$rc" != 0 ] || [ -z "$line" ] || [ "$(printf '%s' "$line" | jq -r .validation)" != ok ]; then
    tail -n 20 "$NODES_TMP/logs/$impl.err" >&2
    t_fail "$kernel --impl $impl: exit $rc, ${line:-no JSON line}"
  fi
  t_note "$impl: $line"
done
