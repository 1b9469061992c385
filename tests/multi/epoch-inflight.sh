#!/usr/bin/env bash
# tests/multi/epoch-inflight.sh - an epoch entered with traffic in flight
# returns in every rank only after everything sent before it has been
# delivered.
#
# 4 nodes x 2 ranks, tclient traffic with no flush before each epoch
# (flush=0), a long linger (records still sit in open batches when the
# epoch starts) and callbacks that sleep now and then (delivery rings are
# not empty).  tclient checks, in every rank, that when shf_epoch returns
# every message of that round has been delivered, and that no message of a
# round arrives after that round's epoch returned.  The daemons' counters
# show that the epochs did find open batches (batches_by_flush > 0).
T=multi-epoch-inflight
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=4 K=2 W=8
t_up --mode loopback -n $N --daemon-args "--linger-us 20000"

export SHF_JOB=einfl SHF_WORLD=$W
args=(traffic n=800 rounds=8 flush=0 epoch=1 minlen=48 maxlen=2000 slow_us=200 slow_every=16
      seed=11 hold=release)
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r nodes_client $((r / K + 1)) "rank$r" "$TCLIENT" "${args[@]}"
done
NODES_SYNC_TIMEOUT_MS=80000 t_release_held $(seq 0 $((W - 1)))
nodes_wait_all || t_fail "a rank failed: an epoch returned before its round was delivered?"
flushed=0
for i in $(seq 1 $N); do
  b=$(nodes_stat "$i" .daemon.batches_by_flush)
  e=$(nodes_stat "$i" .daemon.epochs)
  t_note "node $i: $e epochs, $b batches closed by a flush or epoch mark"
  flushed=$((flushed + b))
done
[ "$flushed" -gt 0 ] || t_fail "no epoch found an open batch: nothing was in flight"
