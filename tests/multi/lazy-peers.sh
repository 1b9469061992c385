#!/usr/bin/env bash
# tests/multi/lazy-peers.sh [idle|kill] - lazy per-peer state (issue 14
# item 6, shuffled(8) peer_idle_ms, docs/protocol-wire.md "Idle peers").
#
# 4 loopback nodes, peer_idle_ms 600, heartbeat_ms 200, peer_timeout_ms
# 1500.  A job of 4 x 2 ranks (tclient traffic: exact counts, order,
# epochs) runs across every node; after it ends:
#  - while a job runs, each of its daemons holds a connection to each
#    other (N - 1 established TCP sockets: counted from /proc/net/tcp by
#    the daemon's pid);
#  - after it, every daemon sees every peer "idle" and holds no
#    established TCP connection within 15 s (the polls are slow on a
#    loaded machine), and counted released connections (conns_released);
#  - heartbeats stopped: no daemon's hb_out nor fabric.recv_bytes moves
#    over 1 s (5 heartbeat periods);
# idle: then a second job across every node is exact again (the peers
#   are woken and go idle again afterwards); then node 2 is restarted
#   while its peers hold it idle: every node sees it as a new session
#   (sessions 2) and a job on all nodes is exact.
# kill: node 4 (id 3) is killed while idle.  A job on nodes 1-3 whose home
#   is node id 3 (job k2: the rendezvous hash of daemon/jobhome.c picks it
#   among the 4 nodes up) wakes it with its JOB_JOINs, and only because
#   it is the job's home (a job never wakes a node outside it otherwise:
#   job-start): every survivor sees it down within peer_timeout_ms +
#   2 heartbeat periods + 1 s and counted the JOB_JOIN its wake held as
#   dropped (wake_dropped), the job is exact, `--all status --timeout
#   2000` answers in time with node 4 missing, and no daemon hangs.
T="multi-lazy-peers-${1:-idle}"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
how=${1:-idle}
t_need "$TCLIENT"
N=4 K=2
idle_ms=600 hb_ms=200 timeout_ms=1500
t_up --mode loopback -n $N --daemon-args "--peer-idle-ms $idle_ms --heartbeat-ms $hb_ms --peer-timeout-ms $timeout_ms"
CTL() { "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" "$@"; }

conns_of() { # established TCP sockets of pid $1
  local ino
  ino=$(ls -l "/proc/$1/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\].*/\1/p' | sort -u)
  [ -n "$ino" ] || { echo 0; return; }
  awk 'NR == FNR { want[$1] = 1; next } FNR > 1 && $4 == "01" && ($10 in want) { n++ } END { print n + 0 }' \
    <(echo "$ino") /proc/net/tcp /proc/net/tcp6
}
alive_nodes() { local i; for i in $(seq 1 $N); do [[ " ${T_KILLED-} " == *" $i "* ]] || echo "$i"; done; }
all_up() { # every live node sees every other live node up (or idle)
  local i p st
  for i in $(alive_nodes); do
    for p in $(alive_nodes); do
      [ "$p" = "$i" ] && continue
      st=$(nodes_peer_state "$i" $((p - 1)))
      [ "$st" = up ] || [ "$st" = idle ] || return 1
    done
  done
}
all_idle() { # every live node sees every live peer idle and holds no connection
  local i p
  for i in $(alive_nodes); do
    for p in $(alive_nodes); do
      [ "$p" = "$i" ] && continue
      [ "$(nodes_peer_state "$i" $((p - 1)))" = idle ] || return 1
    done
    [ "$(conns_of "$(nodes_var PID "$i")")" = 0 ] || return 1
  done
}
snapshot() { # per live node: "hb_out recv_bytes"
  local i
  for i in $(alive_nodes); do nodes_json "$i" stats | jq -r '"\(.daemon.hb_out) \(.fabric.recv_bytes)"'; done
}
job() { # NAME NODES...: a tclient traffic job of K ranks on each node, exact
  local name=$1 r=0 i k
  shift
  rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release   # the previous job's sync points
  export SHF_JOB=$name SHF_WORLD=$(( $# * K ))
  for i in "$@"; do
    for k in $(seq 1 $K); do
      SHF_RANK=$r nodes_client "$i" "$name$r" "$TCLIENT" traffic n=400 rounds=2 minlen=48 \
        maxlen=400 seed=3 hold=release timeout=30000
      r=$((r + 1))
    done
  done
  for k in $(seq 0 $((r - 1))); do
    nodes_sync_wait "held.$k" || { nodes_sync_post release; t_fail "job $name: rank $k never finished"; }
  done
  # the job in common keeps (or made) every pair of its nodes connected
  local c="" want=$(( $# - 1 )) x
  for i in "$@"; do
    x=$(conns_of "$(nodes_var PID "$i")")
    c+="$x "
    [ "$x" = "$want" ] || { t_fail "job $name: node $i has $x connections while the job runs, expected $want; its peers: $(nodes_json "$i" peers | jq -c '[.peers[] | {node, state, quiet, linked, msgs_out, msgs_in}]'); $(nodes_json "$i" stats | jq -c '.daemon | {peers_idled, peers_woken, conns_released}')"; }
  done
  nodes_sync_post release
  nodes_wait_all || t_fail "job $name failed (logs above)"
  t_note "job $name on nodes $*: exact; connections per daemon while it ran: $c"
}
wait_idle() { # WHAT
  local t0 t1
  t0=$(nodes_now_ms)
  t_until 15000 "every peer idle and no connection left ($1)" all_idle
  t1=$(nodes_now_ms)
  t_note "$1: every peer idle, 0 connections per daemon, $((t1 - t0)) ms after the job's end (peer_idle_ms $idle_ms)"
}

t_until 20000 "every node sees every other up" all_up
job a 1 2 3 4
wait_idle "after job a"
rel=0
for i in $(seq 1 $N); do rel=$(( rel + $(nodes_stat "$i" .daemon.conns_released) )); done
[ "$rel" -ge 1 ] || t_fail "no daemon counted a released connection (conns_released $rel)"
t_note "connections released (all daemons): $rel"
s0=$(snapshot)
t_w0=$(nodes_now_ms)
sleep 1   # a measurement window of 5 heartbeat periods, not a wait for a condition
s1=$(snapshot)
t_w1=$(nodes_now_ms)
[ "$s0" = "$s1" ] || t_fail "heartbeats did not stop: hb_out/recv_bytes per daemon moved over $((t_w1 - t_w0)) ms: $(echo $s0) -> $(echo $s1)"
t_note "no heartbeat sent nor byte received by any daemon over $((t_w1 - t_w0)) ms"

case "$how" in
idle)
  job b 1 2 3 4
  wait_idle "after job b"
  woken=0
  for i in $(seq 1 $N); do woken=$(( woken + $(nodes_stat "$i" .daemon.peers_woken) )); done
  [ "$woken" -ge $((N * (N - 1))) ] || t_fail "peers_woken $woken, expected at least $((N * (N - 1)))"
  t_note "peers woken for job b (all daemons): $woken"
  # a restart of a node that its peers hold idle: it rejoins as a new session
  nodes_restart 2 || t_fail "cannot restart node 2"
  t_until 15000 "node 2 back as a new session everywhere" all_up
  for i in 1 3 4; do
    s=$(t_peer_field "$i" 1 sessions)
    [ "${s:-0}" -ge 2 ] || t_fail "node $i: node id 1 has sessions $s after its restart (expected 2)"
  done
  job c 1 2 3 4
  ;;
kill)
  T_KILLED="4"
  nodes kill --node 4 --signal KILL || t_fail "cannot kill node 4's daemon"
  t_note "node 4 killed while idle"
  t_k=$(nodes_now_ms)
  bound=$(( timeout_ms + 2 * hb_ms + 1000 ))
  rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release
  export SHF_JOB=k2 SHF_WORLD=$((3 * K))
  r=0
  for i in 1 2 3; do
    for k in $(seq 1 $K); do
      SHF_RANK=$r nodes_client "$i" "k$r" "$TCLIENT" traffic n=400 rounds=2 minlen=48 \
        maxlen=400 seed=3 hold=release timeout=30000
      r=$((r + 1))
    done
  done
  down_all() { local i; for i in 1 2 3; do t_peer_went_down "$i" 3 || return 1; done; }
  t_until $((bound + 4000)) "every survivor sees node id 3 down" down_all
  t_d=$(nodes_now_ms)
  [ $((t_d - t_k)) -le $((bound + 4000)) ] || t_fail "node id 3 seen down only after $((t_d - t_k)) ms"
  t_note "every survivor saw node id 3 down $((t_d - t_k)) ms after the kill (bound $bound ms + the ranks' start)"
  # the wake held the JOB_JOIN for node 4, which never answered: dropped
  # with its loss and counted, not lost silently
  for i in 1 2 3; do
    wd=$(nodes_stat "$i" .daemon.wake_dropped)
    [ "${wd:-0}" -ge 1 ] || t_fail "node $i: wake_dropped $wd after node id 3 failed to answer its wake (expected >= 1: the held JOB_JOIN)"
  done
  t_note "held messages dropped with node id 3 (wake_dropped per survivor): $(for i in 1 2 3; do nodes_stat "$i" .daemon.wake_dropped; done | tr '\n' ' ')"
  t_release_held $(seq 0 $((r - 1)))
  nodes_wait_all || t_fail "the job on the survivors failed"
  t_note "job k2 on nodes 1 2 3 (its home lost, picked again among them): exact"
  for i in 1 2 3; do
    w=$(nodes_stat "$i" .daemon.peers_woken)
    [ "${w:-0}" -ge 1 ] || t_fail "node $i never woke a peer (peers_woken $w)"
  done
  a0=$(nodes_now_ms)
  out=$(timeout 20 "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" --all status --json --timeout 2000)
  a1=$(nodes_now_ms)
  [ -n "$out" ] || t_fail "--all status gave no answer in $((a1 - a0)) ms"
  st=$(jq -r '.missing["3"].state // "answered"' <<<"$out")
  n=$(jq '.nodes | length' <<<"$out")
  [ "$n" = 3 ] || t_fail "--all status: $n nodes answered (expected 3): $(jq -c . <<<"$out")"
  [ "$st" != answered ] || t_fail "--all status does not list node id 3 missing: $(jq -c .missing <<<"$out")"
  t_note "--all status answered in $((a1 - a0)) ms: 3 nodes, node id 3 missing ($st)"
  t_daemons_alive
  ;;
*) t_fail "unknown mode $how" ;;
esac
t_note "ok"
