#!/usr/bin/env bash
# tests/multi/a2a.sh MODE RDV - 4 nodes x 4 processes, random all-to-all
# with sequence numbers and checksums (tclient traffic): exactly once,
# per-pair order, every epoch complete.
#   MODE loopback|netns; RDV static (clients by scripts/nodes run) or mpi
#   (daemons by mpirun; clients by a second mpirun into the nodes).
T="multi-a2a-$1-$2"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
mode=$1 rdv=$2
t_need "$TCLIENT"
N=4 K=4 W=16
if [ "$mode" = netns ]; then t_up --mode netns -n $N
else t_up --mode loopback --rdv "$rdv" -n $N; fi
t_note "nodes up ($mode, rendezvous $SHF_NODES_RDV)"

args=(traffic n=1500 rounds=4 minlen=48 maxlen=600 big=20000 seed=7 hold=release)
export SHF_JOB=a2a
if [ "$rdv" = mpi ]; then
  # rank r on node r / K (mpirun's block mapping, -npernode K)
  nodes mpirun -npernode $K --timeout 80 -- "$TCLIENT" "${args[@]}" \
    >"$NODES_TMP/logs/mpirun.log" 2>&1 &
  mpid=$!
  NODES_SYNC_TIMEOUT_MS=70000 t_release_held $(seq 0 $((W - 1)))
  wait $mpid || { tail -n 40 "$NODES_TMP/logs/mpirun.log" >&2; t_fail "the MPI job failed"; }
  out=$(cat "$NODES_TMP/logs/mpirun.log")
else
  for r in $(seq 0 $((W - 1))); do
    SHF_RANK=$r SHF_WORLD=$W nodes_client $((r / K + 1)) "rank$r" "$TCLIENT" "${args[@]}"
  done
  NODES_SYNC_TIMEOUT_MS=70000 t_release_held $(seq 0 $((W - 1)))
  nodes_wait_all || t_fail "a rank failed"
  out=$(cat "$NODES_TMP"/logs/rank*.log)
fi
[ "$(grep -c '^rank .*: sent' <<< "$out")" = $W ] || { echo "$out" >&2; t_fail "not every rank reported"; }

# every daemon relayed to and from the others, and saw nothing bad
for i in $(seq 1 $N); do
  s=$(nodes_json "$i" stats) || t_fail "node $i: no stats"
  read -r bin bout bad dd dn <<< "$(jq -r '[.daemon.batches_in, .daemon.batches_out, .daemon.wire_bad,
      .clients_total.drops_dead, .clients_total.drops_down] | @tsv' <<< "$s")"
  t_note "node $i: batches in $bin out $bout, wire_bad $bad, drops $dd/$dn"
  [ "$bin" -gt 0 ] && [ "$bout" -gt 0 ] || t_fail "node $i did not exchange batches"
  [ "$bad" = 0 ] && [ "$dd" = 0 ] && [ "$dn" = 0 ] || t_fail "node $i: bad messages or drops"
done
t_note "16 ranks on 4 nodes: exactly once, in order, 4 epochs: ok"
