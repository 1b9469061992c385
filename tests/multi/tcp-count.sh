#!/usr/bin/env bash
# tests/multi/tcp-count.sh - a growing set (tcp://HOST:PORT rendezvous,
# max_nodes slots) counts the nodes that exist, not its slots (issue 23,
# item 2).  2 loopback nodes, with max_nodes 64 (62 slots never claimed):
#  1. `status --json` says nodes 2 on both, and the text "node N of 2";
#  2. systemd's STATUS line (a NOTIFY_SOCKET every daemon sends to) says
#     "nodes up 2/2", never "/64";
#  3. `--all status` has one row per node (2) and exits 0;
#  4. Prometheus: shuffle_nodes 2;
#  5. node 2 killed: it is still a node (nodes 2), its `--all status` row
#     keeps its name, and `--all status` exits 4 (degraded).
T=multi-tcp-count
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
command -v python3 >/dev/null || t_skip "needs python3 (the notify socket)"
notify=$NODES_TMP/notify.sock
python3 - "$notify" "$NODES_TMP/notify.log" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(1.0)
end = time.time() + 120
with open(sys.argv[2], "a") as f:
    while time.time() < end:
        try:
            m = s.recv(4096)
        except socket.timeout:
            continue
        f.write(m.decode(errors="replace").replace("\n", " | ") + "\n")
        f.flush()
PY
listener=$!
# (the nodes' cleanup too: this trap replaces the one common.sh set)
trap 'rc=$?; kill $listener 2>/dev/null; (exit $rc); nodes_cleanup' EXIT
for _ in $(seq 100); do [ -S "$notify" ] && break; sleep 0.05; done
[ -S "$notify" ] || t_fail "the notify listener did not start"
export NOTIFY_SOCKET=$notify
t_up --mode loopback -n 2 --rdv tcp \
  --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200 --max-nodes 64"
unset NOTIFY_SOCKET
t_all_up 20000

# 1. status
for i in 1 2; do
  n=$(nodes_json $i status | jq -r .nodes)
  [ "$n" = 2 ] || t_fail "node $i: status --json says nodes $n, not 2 (max_nodes is 64)"
done
line=$("$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" status | grep -m1 'node ')
case $line in *"of 2)"*) ;; *) t_fail "node 1: status says '$line', not 'of 2'" ;; esac
t_note "status: nodes 2 (max_nodes 64): $line"

# 2. STATUS=
sleep 2.5  # a status tick (every 2 s) after both are up
grep -q "STATUS=nodes up 2/2" "$NODES_TMP/notify.log" ||
  t_fail "no 'STATUS=nodes up 2/2' sent: $(tail -n 5 "$NODES_TMP/notify.log")"
grep "STATUS=nodes up" "$NODES_TMP/notify.log" | grep -q "/64" &&
  t_fail "a STATUS line counts the 64 slots: $(grep -m1 /64 "$NODES_TMP/notify.log")"
t_note "sd_notify: $(grep -m1 'STATUS=nodes up 2/2' "$NODES_TMP/notify.log")"

# 3. --all status
ctl1() { "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" "$@"; }
out=$(ctl1 --all status)
rc=$?
rows=$(grep -cE '^[0-9]+ ' <<<"$out")
[ "$rc" = 0 ] || t_fail "--all status exits $rc with both nodes up (want 0): $(head -n 5 <<<"$out")"
[ "$rows" = 2 ] || t_fail "--all status has $rows node rows, not 2: $(head -n 6 <<<"$out")"
t_note "--all status: 2 rows, exit 0"

# 4. Prometheus
pn=$(ctl1 stats --prometheus | sed -n 's/^shuffle_nodes //p')
[ "$pn" = 2 ] || t_fail "shuffle_nodes $pn, not 2"
t_note "prometheus: shuffle_nodes $pn"

# 5. a member goes down: still a node, with its name
name2=$(nodes_json 2 status | jq -r .node_name)
kill -KILL "$(nodes_var PID 2)"
# (not t_until: it fails when any daemon is gone, and this one is meant to be)
for _ in $(seq 200); do
  st=$(nodes_peer_state 1 1)
  [ "$st" != up ] && [ "$st" != idle ] && break
  sleep 0.1
done
[ "$st" != up ] && [ "$st" != idle ] || t_fail "node 1 still sees node 2 '$st' 20 s after its kill"
n=$(nodes_json 1 status | jq -r .nodes)
[ "$n" = 2 ] || t_fail "node 2 down: node 1 says nodes $n, not 2"
out=$(ctl1 --all status)
rc=$?
[ "$rc" = 4 ] || t_fail "--all status with node 2 down exits $rc (want 4): $out"
row=$(grep -E '^1 ' <<<"$out")
[ -n "$row" ] || t_fail "no row for node 1 (node 2) with it down: $out"
grep -qw -- "$name2" <<<"$row" || t_fail "node 2's row lost its name $name2: '$row'"
t_note "node 2 down: nodes 2, its row '$row', exit 4"
t_note "OK"
