#!/usr/bin/env bash
# tests/multi/key-mismatch.sh - two daemons with different cluster keys
# never become peers (issue 15, item 1).
#
# Two nodes in a static rendezvous, loopback; scripts/nodes gives node 2 a
# key of its own (--other-key 2).  Each probes the other every second and
# answers its probes, but no handshake can complete: neither ever sees the
# other up (0 sessions), both count the failed handshakes in
# stats.daemon.auth_failed, and each logs the failure naming the peer's
# address (rate-limited: a few lines, not one per heartbeat).  The control:
# `shufflectl status` says the peers are authenticated with a key.
T=multi-key-mismatch
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_up --mode loopback -n 2 --other-key 2 --daemon-args "--heartbeat-ms 100"
auth=$(nodes_json 1 status | jq -r '.peer_auth')
[ "$auth" = key ] || t_fail "node 1: status peer_auth '$auth', expected 'key'"
t_until 15000 "both nodes count at least 3 failed handshakes" \
  eval '[ "$(nodes_stat 1 .daemon.auth_failed)" -ge 3 ] 2>/dev/null &&
        [ "$(nodes_stat 2 .daemon.auth_failed)" -ge 3 ] 2>/dev/null'
for i in 1 2; do
  p=$((2 - i)) # the other node's id
  st=$(nodes_peer_state "$i" "$p") ss=$(t_peer_field "$i" "$p" sessions)
  t_note "node $i: peer $p $st, $ss sessions, auth_failed $(nodes_stat "$i" .daemon.auth_failed)"
  [ "$st" != up ] && [ "${ss:-0}" = 0 ] || t_fail "node $i took node $((p + 1)) with another key ($st, $ss sessions)"
  log=$(nodes_var LOG "$i")
  other=$(nodes_var ADDR $((p + 1)))
  grep -q "(${other%:*}.*authentication failed" "$log" ||
    t_fail "node $i did not log the failed authentication naming ${other%:*}"
  lines=$(grep -c "authentication failed" "$log")
  [ "$lines" -le 10 ] || t_fail "node $i logged $lines lines about it (not rate-limited)"
done
t_daemons_alive
t_note "different keys: never peers, counted and logged: ok"
# a key file others can read: the daemon refuses to start, naming the file
# and the fix
bad=$NODES_TMP/bad.key
head -c 32 /dev/urandom >"$bad"
chmod 644 "$bad"
if out=$(timeout 20 "$SHF_NODES_SHUFFLED" --rendezvous none --runtime-dir "$NODES_TMP/badrt" \
           --cluster-key "$bad" 2>&1); then
  t_fail "a daemon started with a key file of mode 0644"
fi
echo "$out" | grep -q "cluster_key $bad: .*chmod 600 $bad" ||
  t_fail "the refusal does not name the file and the fix: $out"
t_note "a key file of mode 0644 is refused: ok"
