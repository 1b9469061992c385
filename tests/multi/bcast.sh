#!/usr/bin/env bash
# tests/multi/bcast.sh N K - shf_bcast() and shf_node_info() on N simulated
# nodes (loopback) x K ranks: every rank mixes broadcasts (with and without
# SHF_BCAST_SELF) and sends to every other rank; each rank must get each
# message exactly once, per source in issue order (bc-client exact), and
# shf_node_info() must match the layout.  Then the daemons' counters: every
# broadcast taken from a send ring made exactly N-1 wire copies, and each
# node received the copies of every other node's broadcasts.
# BCAST_EXTRA: more bc-client arguments (info=0 runs against a daemon
# without NODE_INFO).
# ARGS after N K: more bc-client arguments (many=1 batchcb=1: half the
# sends as shf_send_many, batch delivery).
N=$1 K=$2
shift 2
T="multi-bcast-$N${1:+-many}"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
BCCLIENT=${SHF_TEST_BCCLIENT:-$NODES_BUILD/tests/node/bc-client}
t_need "$BCCLIENT"
W=$((N * K)) OPS=300
t_up --mode loopback -n "$N"
t_note "$N nodes up, $K ranks each"

export SHF_JOB=bcast
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r SHF_WORLD=$W nodes_client $((r / K + 1)) "rank$r" "$BCCLIENT" exact \
    per_node="$K" ops=$OPS size=100 ${BCAST_EXTRA-} "$@"
done
NODES_SYNC_TIMEOUT_MS=90000 t_release_held $(seq 0 $((W - 1)))
nodes_wait_all || t_fail "a rank failed"
out=$(cat "$NODES_TMP"/logs/rank*.log)
[ "$(grep -c 'bcast exact: ok' <<< "$out")" = $W ] || { echo "$out" >&2; t_fail "not every rank reported"; }
[ -n "${BCAST_EXTRA-}" ] || [ "$(grep -c 'node_info: .*: ok' <<< "$out")" = $W ] ||
  t_fail "not every rank checked shf_node_info"

# broadcasts per rank: ops 0, 2, 3, 5, ... (k % 3 != 1)
B=$(( OPS - (OPS + 1) / 3 ))
for i in $(seq 1 "$N"); do
  s=$(nodes_json "$i" stats) || t_fail "node $i: no stats"
  read -r bin copies brx bdel bad dd dn <<< "$(jq -r '[.daemon.bcast_in, .daemon.bcast_wire_copies,
      .daemon.bcast_rx, .daemon.bcast_deliveries, .daemon.wire_bad,
      .clients_total.drops_dead, .clients_total.drops_down] | @tsv' <<< "$s")"
  t_note "node $i: bcast_in $bin, wire copies $copies, received $brx, deliveries $bdel"
  [ "$bin" = $((K * B)) ] || t_fail "node $i: bcast_in $bin, expected $((K * B))"
  [ "$copies" = $(( bin * (N - 1) )) ] ||
    t_fail "node $i: $copies wire copies for $bin broadcasts on $N nodes (expected N-1 each)"
  [ "$brx" = $(( (N - 1) * K * B )) ] || t_fail "node $i: received $brx broadcast copies"
  # each local rank gets every broadcast of the others, and the SELF half of its own
  want=$(( K * ( (W - 1) * B + OPS / 3 ) ))
  [ "$bdel" = "$want" ] || t_fail "node $i: $bdel broadcast deliveries, expected $want"
  [ "$bad" = 0 ] && [ "$dd" = 0 ] && [ "$dn" = 0 ] || t_fail "node $i: bad messages or drops"
done
t_fault_check_clean # every daemon answers; none reported memory misuse
t_note "$W ranks on $N nodes: broadcasts exactly once, in order with sends; N-1 wire copies each: ok"
