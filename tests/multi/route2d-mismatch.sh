#!/usr/bin/env bash
# tests/multi/route2d-mismatch.sh - routing is the same on every daemon,
# checked at join (issue 14 item 5): 4 nodes in a static rendezvous, nodes
# 1-3 with routing=2d, node 4 started with routing=direct (its command line
# gets a later --routing, which wins).  Node 4 never becomes a peer of the
# others nor they of it (0 sessions both ways); both sides count the refused
# handshakes in stats.daemon.routing_refused and log the reason naming the
# peer's address and both routings (rate-limited).  The three 2d nodes meet
# among themselves (node 2 and node 3 through node 1).
T=multi-route2d-mismatch
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_up --mode loopback -n 4 --defer 4 --daemon-args "--routing 2d --heartbeat-ms 100"
echo 'start_4+=(--routing direct)' >> "$NODES_DIR/bin/start-cmds"
"$NODES_SCRIPT" start --dir "$NODES_DIR" --node 4 >/dev/null || t_fail "node 4 did not start"
# shellcheck disable=SC1091
. "$NODES_DIR/env"
r4=$(nodes_json 4 config | jq -r '.config.routing.value')
r1=$(nodes_json 1 config | jq -r '.config.routing.value')
[ "$r4" = direct ] && [ "$r1" = 2d ] || t_fail "routing: node 1 $r1, node 4 $r4 (expected 2d, direct)"
t_until 15000 "node 4 and its neighbours count at least 3 refused messages" \
  eval '[ "$(nodes_stat 4 .daemon.routing_refused)" -ge 3 ] 2>/dev/null &&
        [ "$(nodes_stat 2 .daemon.routing_refused)" -ge 3 ] 2>/dev/null &&
        [ "$(nodes_stat 3 .daemon.routing_refused)" -ge 3 ] 2>/dev/null'
t_until 15000 "nodes 1-3 are up with each other" \
  eval 't_peer_is 1 1 up && t_peer_is 1 2 up && t_peer_is 2 2 up && t_peer_is 2 0 up &&
        t_peer_is 3 1 up && t_peer_is 3 0 up'
for i in 1 2 3; do
  st=$(nodes_peer_state "$i" 3) ss=$(t_peer_field "$i" 3 sessions)
  st4=$(nodes_peer_state 4 $((i - 1))) ss4=$(t_peer_field 4 $((i - 1)) sessions)
  t_note "node $i: peer 3 $st ($ss sessions); node 4: peer $((i - 1)) $st4 ($ss4 sessions)"
  [ "$st" != up ] && [ "${ss:-0}" = 0 ] || t_fail "node $i took node 4 (routing direct): $st, $ss sessions"
  [ "$st4" != up ] && [ "${ss4:-0}" = 0 ] || t_fail "node 4 took node $i (routing 2d): $st4, $ss4 sessions"
done
log4=$(nodes_var LOG 4) log2=$(nodes_var LOG 2)
a1=$(nodes_var ADDR 1) a2=$(nodes_var ADDR 2) a3=$(nodes_var ADDR 3) a4=$(nodes_var ADDR 4)
# (rate-limited: the lines node 4 logs name some of its three peers)
grep -qE "\((${a1%:*}|${a2%:*}|${a3%:*}), .*refused: it routes 2d, this daemon direct; routing must be the same on every daemon" "$log4" ||
  t_fail "node 4 did not log the refusal naming a peer's address and both routings"
grep -q "(${a4%:*}.*refused: it routes direct, this daemon 2d; routing must be the same on every daemon" "$log2" ||
  t_fail "node 2 did not log the refusal naming ${a4%:*} and both routings"
lines=$(grep -c "routing must be the same" "$log4")
[ "$lines" -le 10 ] || t_fail "node 4 logged $lines lines about it (not rate-limited)"
t_daemons_alive
t_note "routing=direct among routing=2d daemons: refused both ways, counted and logged: ok"
