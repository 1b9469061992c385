#!/usr/bin/env bash
# tests/multi/route2d-a2a.sh - routing=2d (issue 14 item 5): 9 nodes on a
# 3 x 3 grid, 2 ranks each, a random all-to-all (tclient traffic: sequence
# numbers and checksums): every message exactly once, per-pair order, every
# epoch complete; messages between nodes of another row and column go
# through one intermediate (stats fwd_msgs), which bundles what it forwards
# to the same next node (FWD_BUNDLE): fewer fabric sends than forwarded
# messages in all (fwd_sends), every bundle carrying two or more
# (fwd_bundled_msgs against fwd_bundles), no message sent twice.  Connections: each daemon
# exchanged messages directly (shufflectl peers, "linked") with at most
# 2 + 2 = 4 peers, every other peer is "via N" with N in its row, and the
# kernel agrees: the daemon's established TCP connections (ss) reach at
# most 4 other node addresses.
T=multi-route2d-a2a
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=9 K=2 W=18 COLS=3 BOUND=4
t_up --mode loopback -n $N --daemon-args "--routing 2d"
t_note "nodes up (routing=2d, $N nodes)"
r=$(nodes_json 1 config | jq -r '.config.routing.value')
[ "$r" = 2d ] || t_fail "node 1 runs with routing=$r"

args=(traffic n=600 rounds=3 minlen=48 maxlen=600 big=20000 seed=11 hold=release)
export SHF_JOB=r2d
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r SHF_WORLD=$W nodes_client $((r / K + 1)) "rank$r" "$TCLIENT" "${args[@]}"
done
NODES_SYNC_TIMEOUT_MS=120000 t_release_held $(seq 0 $((W - 1)))
nodes_wait_all || t_fail "a rank failed"
out=$(cat "$NODES_TMP"/logs/rank*.log)
[ "$(grep -c '^rank .*: sent' <<< "$out")" = $W ] || { echo "$out" >&2; t_fail "not every rank reported"; }

fwd_total=0 sends_total=0 bundles_total=0 bundled_total=0 early_total=0
for i in $(seq 1 $N); do
  me=$((i - 1))
  s=$(nodes_json "$i" stats) || t_fail "node $i: no stats"
  read -r bin bout bad dd dn fwd fdrop refused <<< "$(jq -r '[.daemon.batches_in, .daemon.batches_out,
      .daemon.wire_bad, .clients_total.drops_dead, .clients_total.drops_down,
      .daemon.fwd_msgs, .daemon.fwd_dropped, .daemon.routing_refused] | @tsv' <<< "$s")"
  read -r sends bundles bundled early edrop <<< "$(jq -r '[.daemon.fwd_sends, .daemon.fwd_bundles,
      .daemon.fwd_bundled_msgs, .daemon.early_held, .daemon.early_dropped] | @tsv' <<< "$s")"
  # a handshake's last heartbeat, dropped by an intermediate, comes after
  # the data: kept, never lost (docs/protocol-wire.md, "Early messages")
  [ "$edrop" = 0 ] || t_fail "node $i: $edrop early messages over the bound"
  early_total=$((early_total + early))
  [[ "$sends$bundles$bundled" =~ ^[0-9]+$ ]] ||
    t_fail "node $i: no bundle counters (fwd_sends '$sends', fwd_bundles '$bundles', fwd_bundled_msgs '$bundled')"
  # each forwarded message leaves at most once: alone (a send each) or in a bundle
  [ $((sends - bundles + bundled)) -le "$fwd" ] ||
    t_fail "node $i: $sends sends ($bundles bundles of $bundled) for $fwd forwarded messages"
  [ "$bundled" -ge $((2 * bundles)) ] || t_fail "node $i: $bundles bundles carry only $bundled messages"
  fwd_total=$((fwd_total + fwd)) sends_total=$((sends_total + sends))
  bundles_total=$((bundles_total + bundles)) bundled_total=$((bundled_total + bundled))
  [ "$bin" -gt 0 ] && [ "$bout" -gt 0 ] || t_fail "node $i did not exchange batches"
  # (fwd_dropped: probes that reached an intermediate before the
  # destination was up there, during start-up; no data: drops are 0)
  [ "$bad" = 0 ] && [ "$dd" = 0 ] && [ "$dn" = 0 ] && [ "$refused" = 0 ] ||
    t_fail "node $i: bad $bad, drops $dd/$dn, fwd_dropped $fdrop, routing_refused $refused"
  p=$(nodes_json "$i" peers) || t_fail "node $i: no peers"
  up=$(jq '[.peers[] | select(.state == "up")] | length' <<< "$p")
  [ "$up" = $((N - 1)) ] || t_fail "node $i: $up peers up, expected $((N - 1))"
  linked=$(jq '[.peers[] | select(.linked)] | length' <<< "$p")
  # every linked peer is in my row or column; every other one is routed
  # through a node of my row or column
  badl=$(jq --argjson me $me --argjson c $COLS '[.peers[] | select(.linked) |
      select((.node / $c | floor) != ($me / $c | floor) and (.node % $c) != ($me % $c))] | length' <<< "$p")
  badv=$(jq --argjson me $me --argjson c $COLS '[.peers[] |
      select((.node / $c | floor) != ($me / $c | floor) and (.node % $c) != ($me % $c)) |
      select((.route | test("^via [0-9]+$")) | not)] | length' <<< "$p")
  # the kernel's view: other node addresses this daemon has TCP connections with
  ip=$(nodes_var ADDR "$i"); ip=${ip%:*}
  conns=$(ss -tnH state established "( src $ip )" 2>/dev/null | awk '{print $4}' |
          sed 's/:[0-9]*$//' | grep -v "^$ip\$" | sort -u | wc -l)
  t_note "node $i: batches in $bin out $bout, forwarded $fwd in $sends sends ($bundles bundles of $bundled; not forwarded $fdrop); peers linked $linked (bound $BOUND), TCP peers $conns"
  [ "$linked" -le $BOUND ] || t_fail "node $i talks directly to $linked peers (bound $BOUND)"
  [ "$badl" = 0 ] || t_fail "node $i talks directly to $badl peers outside its row and column"
  [ "$badv" = 0 ] || t_fail "node $i: $badv peers outside its row and column not routed 'via N'"
  [ "$conns" -le $BOUND ] || t_fail "node $i has TCP connections with $conns other nodes (bound $BOUND)"
done
[ "$fwd_total" -gt 0 ] || t_fail "no message was forwarded"
t_note "forwarded $fwd_total messages in $sends_total fabric sends: $bundles_total bundles carried $bundled_total; $early_total messages came before their session's handshake ended (kept)"
[ "$bundles_total" -gt 0 ] && [ "$bundled_total" -gt "$bundles_total" ] ||
  t_fail "no forwarded message was bundled ($bundles_total bundles, $bundled_total messages in them)"
[ "$sends_total" -lt "$fwd_total" ] ||
  t_fail "forwarding took $sends_total fabric sends for $fwd_total messages: no aggregation"
t_daemons_alive
t_note "$W ranks on $N nodes, routing=2d: exactly once, in order, 3 epochs, <= $BOUND links each, $fwd_total forwarded in $sends_total sends: ok"
