#!/usr/bin/env bash
# tests/multi/early-data.sh - messages that come before the handshake ends
# (docs/protocol-wire.md, "Sessions"; a cluster key).  The heartbeat that
# ends a handshake can be lost while the other side, up already, sends:
# under routing=2d an intermediate drops heartbeats for a node it has no
# session with yet, and multi-route2d-a2a lost its first batches so (a
# flush that timed out after 30 s: the receiver dropped batch 1 as stale
# and waited for it behind batch 2 forever).
#
# wire-inject (mode early) plays node id 1 with the key: it probes the
# daemon (node id 0) until the daemon knows its tag (JOINING), then, before
# the heartbeat that proves the key, sends two batches of that session
# (seq 1 and 2, for a job the daemon does not know) and one of another tag.
# The daemon must keep the two (early_held 2, nothing dropped), ask for the
# proof at once (a heartbeat with HB_WAKE: "woken yes"), take them right
# after the proof (batches_in 2, both acknowledged: "acked 2"; their records
# come back as drops, msgs_unroutable 2), and never take the third.
T=multi-early-data
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 2 --external 2
[ -n "$SHF_NODES_KEY" ] || t_fail "the nodes run without a cluster key"
stale0=$(nodes_stat 1 .daemon.wire_stale)
"$WIRE_INJECT" --me 1 --nodes 2 --timeout 15000 --bind "$SHF_NODES_ADDR_2" --key "$SHF_NODES_KEY" \
  --peer "0=$SHF_NODES_ADDR_1" early 0 >"$NODES_TMP/logs/inject.log" 2>&1 &
inj=$!
NODES_SYNC_TIMEOUT_MS=20000 nodes_sync_wait early-sent ||
  { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "the injector failed"; }
cat "$NODES_TMP/logs/inject.log"
s=$(nodes_json 1 stats) || t_fail "node 1: no stats"
read -r held dropped bin unr stale <<< "$(jq -r '[.daemon.early_held, .daemon.early_dropped,
    .daemon.batches_in, .daemon.msgs_unroutable, .daemon.wire_stale] | @tsv' <<< "$s")"
t_note "node 1: early_held $held, early_dropped $dropped, batches_in $bin, msgs_unroutable $unr, wire_stale $stale0 -> $stale"
grep -qx "acked 2" "$NODES_TMP/logs/inject.log" ||
  t_fail "the daemon did not take the two early batches once up ($(grep '^acked' "$NODES_TMP/logs/inject.log"))"
[ "$held" = 2 ] && [ "$dropped" = 0 ] || t_fail "early_held $held (expected 2), early_dropped $dropped"
[ "$bin" = 2 ] && [ "$unr" = 2 ] || t_fail "batches_in $bin, msgs_unroutable $unr (expected 2 and 2)"
[ "$stale" -gt "$stale0" ] || t_fail "the batch of another tag was not counted stale"
grep -qx "woken yes" "$NODES_TMP/logs/inject.log" ||
  t_fail "the daemon did not ask for the handshake's end (no HB_WAKE heartbeat)"
[ "$(nodes_peer_state 1 1)" = up ] || t_fail "node 1's session with the injector is $(nodes_peer_state 1 1)"
nodes_sync_post inject-exit
wait $inj || { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "the injector failed"; }
t_daemons_alive
t_note "early messages kept, asked for, and taken once up, in order, once: ok"
