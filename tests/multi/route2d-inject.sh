#!/usr/bin/env bash
# tests/multi/route2d-inject.sh - malformed FWD_BUNDLEs (routing=2d).
#
# Three nodes on a 2 x 2 grid (node ids 0 1 / 2 -): ids 0 and 1 are
# daemons, id 2 is wire-inject, a neighbour of 0 only, so that 2 -> 1 goes
# through 0.  The injector first sends node 0 a well-formed bundle of two
# FWDs, each a probe of its own for node 1: node 0 forwards them and node
# 1's answer comes back through node 0, in the same session.  Then three
# malformed bundles (a zero count, an item whose length runs past the end,
# a bundle inside a bundle), each in the session of the moment: node 0
# counts each (wire_bad, exactly 3), cuts that session each time (the
# injector sees a new tag of node 0's and handshakes again: 1 + 3 sessions
# in all), and lives on; real traffic between nodes 0 and 1 meanwhile and
# afterwards completes.
T=multi-route2d-inject
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 3 --external 3 --daemon-args "--heartbeat-ms 100 --routing 2d"
"$WIRE_INJECT" --me 2 --nodes 3 --2d 1 --timeout 10000 --bind "$SHF_NODES_ADDR_3" --key "$SHF_NODES_KEY" \
  --peer "0=$SHF_NODES_ADDR_1" --peer "1=$SHF_NODES_ADDR_2" bundle 0 1 \
  >"$NODES_TMP/logs/inject.log" 2>&1 &
inj=$!
export SHF_JOB=real SHF_WORLD=4
for r in 0 1 2 3; do
  SHF_RANK=$r nodes_client $((r / 2 + 1)) "rank$r" "$TCLIENT" traffic n=3000 rounds=6 hold=release
done
NODES_SYNC_TIMEOUT_MS=30000 nodes_sync_wait bundle-sent ||
  { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "injector failed"; }
cat "$NODES_TMP/logs/inject.log"
cut=$(sed -n 's/^sent \([0-9]*\) cut$/\1/p' "$NODES_TMP/logs/inject.log")
[ "$cut" = 3 ] || t_fail "the injector saw $cut sessions cut, expected 3"
bad=$(nodes_stat 1 .daemon.wire_bad)
sessions=$(nodes_json 1 peers | jq -r '.peers[] | select(.node == 2) | .sessions')
fwd=$(nodes_stat 1 .daemon.fwd_msgs)
t_note "node 1: wire_bad $bad, sessions with the injector $sessions, forwarded $fwd"
[ "$bad" = 3 ] || t_fail "node 1: wire_bad $bad after 3 malformed bundles, expected exactly 3"
[ "$sessions" = 4 ] || t_fail "node 1: $sessions sessions with the injector, expected 1 + 3 cut"
[ "$fwd" -ge 2 ] || t_fail "node 1 forwarded $fwd messages (the good bundle holds 2)"
n=$(grep -c "it sent a malformed FWD_BUNDLE" "$(nodes_var LOG 1)")
[ "$n" = 3 ] || t_fail "node 1 logged $n sessions cut for a malformed bundle, expected 3"
t_daemons_alive
t_release_held 0 1 2 3
nodes_wait_all || t_fail "real traffic between nodes 1 and 2 failed"
nodes_sync_post inject-exit
wait $inj || { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "the injector failed"; }
[ "$(nodes_stat 2 .daemon.wire_bad)" = 0 ] || t_fail "node 2 counted bad messages (it was sent none)"
t_daemons_alive
t_note "malformed bundles counted, their sessions cut, the daemon alive, real traffic unaffected: ok"
