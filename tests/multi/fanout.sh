#!/usr/bin/env bash
# tests/multi/fanout.sh N [kill] - shufflectl --all through the daemons'
# fan-out tree (daemon/admin/fanout.c), on N loopback nodes, no ranks.
#
# Checked, asking node 1 (daemon node id 0):
#  - --all status|peers|jobs|clients|stats|ping --json: one answer per node
#    (N of them, each under its node id and naming that node), nothing
#    missing; the table form lists N rows plus totals and exits 0; stats
#    --all --prometheus has shuffle_up{node=...} 1 for each node;
#  - the fan-out is a tree (K = --fanout, 2 at 4 nodes without kill, else
#    the default 8): the root asks min(K, N-1) children, none asks more
#    than K, the depth is at most log_K(N) rounded up (each answer's
#    fan_parent);
#  - the wall time of `shufflectl --all status` (SAMPLES runs; raw values
#    and the median printed: the figure of docs/shufflectl.md);
# kill: node 3 (id 2) is killed (SIGKILL) and at once, while every survivor
# still counts it up (peer_timeout_ms 3000):
#  - `--all status --timeout 1000` answers within its bound (shufflectl
#    exits 0 only then; the root's elapsed_ms < 1000) and lists node id 2
#    as missing (silent; down or failing if its loss was seen first), the
#    N-1 others answered; the table form exits 4 and shows the node's
#    state;
#  - once the survivors declared it down, the answer lists it "down" and
#    comes back without waiting for the deadline (the root's elapsed_ms
#    under half of it).
T="multi-fanout-$1${2:+-$2}"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
N=$1 how=${2:-}
SAMPLES=${FANOUT_SAMPLES:-9}
peer_timeout_ms=1000
[ "$how" = kill ] && peer_timeout_ms=3000  # the victim stays "up" a while
fanout=8                           # the default
[ "$N" = 4 ] && [ -z "$how" ] && fanout=2  # a deeper tree at 4 nodes
t_up -n "$N" --daemon-args "--peer-timeout-ms $peer_timeout_ms --heartbeat-ms 200 --fanout $fanout"
CTL() { "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" "$@"; }

# every node sees every other up (so that the root's tree holds them all)
t_all_up
t_note "$N nodes up, each sees the others up"

check_all() { # CMD: --all CMD --json lists every node, none missing
  local out n m bad
  out=$(CTL --all "$1" --json) || t_fail "--all $1 --json failed"
  n=$(jq '.nodes | length' <<<"$out")
  m=$(jq '.missing | length' <<<"$out")
  [ "$n" = "$N" ] && [ "$m" = 0 ] || t_fail "--all $1: $n nodes answered, $m missing (expected $N, 0): $(jq -c .missing <<<"$out")"
  bad=$(jq -r '.nodes | to_entries[] | select((.value.node_id | tostring) != .key) | .key' <<<"$out")
  [ -z "$bad" ] || t_fail "--all $1: the answers under $bad are not their node's"
  [ "$(jq -r .command <<<"$out")" = "$1" ] || t_fail "--all $1: command is $(jq -r .command <<<"$out")"
  [ "$(jq -r .all <<<"$out")" = true ] || t_fail "--all $1: no all=true"
}
for cmd in status peers jobs clients stats ping; do check_all "$cmd"; done
names=$(CTL --all status --json | jq -r '[.nodes[] | .node_name] | sort | join(",")')
want=$(for i in $(seq 1 "$N"); do nodes_var HOST "$i"; done | sort | paste -sd,)
[ "$names" = "$want" ] || t_fail "--all status names the nodes '$names', expected '$want'"
t_note "--all status|peers|jobs|clients|stats|ping --json: $N nodes each"

table=$(CTL --all status); rc=$?
[ "$rc" = 0 ] || t_fail "--all status (table) exited $rc: $table"
rows=$(grep -cE '^[0-9]+ ' <<<"$table")
[ "$rows" = "$N" ] || t_fail "--all status table has $rows node rows, expected $N: $table"
grep -q "^total .*$N nodes.*$N ok, 0 not" <<<"$table" || t_fail "--all status table has no right totals row: $table"
prom=$(CTL --all stats --prometheus) || t_fail "stats --all --prometheus failed"
up=$(grep -c '^shuffle_up{node="[0-9]*",node_name="[^"]*"} 1$' <<<"$prom")
[ "$up" = "$N" ] || t_fail "stats --all --prometheus: $up shuffle_up 1 samples, expected $N"
grep -q '^shuffle_ctl_requests_total{node="0",node_name="' <<<"$prom" ||
  t_fail "stats --all --prometheus: no per-node daemon counter"
t_note "tables and Prometheus: $N rows, $N shuffle_up samples"

# the tree's shape, from each answer's fan_parent: the root asked
# min(K, N-1) children, nobody asked more than K, and the depth is at most
# log_K(N) rounded up (contiguous shares)
out=$(CTL --all status --json) || t_fail "--all status failed"
kids=$(jq '[.nodes[] | select(.fan_parent == 0)] | length' <<<"$out")
want=$((N - 1 < fanout ? N - 1 : fanout))
[ "$kids" = "$want" ] || t_fail "the root asked $kids children, expected $want (fan-out $fanout)"
most=$(jq '[.nodes[] | .fan_parent | select(. != null)] | group_by(.) | map(length) | max // 0' <<<"$out")
[ "$most" -le "$fanout" ] || t_fail "a node asked $most children, fan-out $fanout"
depth=$(jq '.nodes as $n | [$n | keys[] | {k: ., d: 0} | until($n[.k].fan_parent == null; {k: ($n[.k].fan_parent | tostring), d: (.d + 1)}) | .d] | max' <<<"$out")
lg=0 p=1; while [ "$p" -lt "$N" ]; do p=$((p * fanout)); lg=$((lg + 1)); done
[ "$depth" -le "$lg" ] || t_fail "tree depth $depth at $N nodes, fan-out $fanout (at most $lg)"
t_note "fan-out $fanout at $N nodes: the root asked $kids, depth $depth (bound $lg)"

# the figure: wall time of shufflectl --all status
# (the process's wall time, and the root daemon's elapsed_ms: request in
# to combined answer out)
times=() inner=()
for _ in $(seq 1 "$SAMPLES"); do
  t0=$(date +%s%N)
  out=$(CTL --all status --json) || t_fail "--all status failed"
  t1=$(date +%s%N)
  times+=($(((t1 - t0) / 1000)))
  inner+=("$(jq '.elapsed_ms * 1000 | floor' <<<"$out")")
done
med() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
t_note "shufflectl --all status at $N nodes (fan-out $fanout), $SAMPLES runs, wall us: $(printf '%s\n' "${times[@]}" | sort -n | paste -sd' '); median $(med "${times[@]}") us"
t_note "  the root daemon's elapsed_ms of the same runs, us: $(printf '%s\n' "${inner[@]}" | sort -n | paste -sd' '); median $(med "${inner[@]}") us"

if [ "$how" = kill ]; then
  V=3
  nodes kill --node $V --signal KILL || t_fail "cannot kill node $V"
  # at once: the survivors still count it up for peer_timeout_ms (3000),
  # so the root asks it and gets nothing: silent after the daemons' 800 ms
  # (4/5 of --timeout 1000); shufflectl exits 0 only when the answer came
  # within its --timeout
  t0=$(nodes_now_ms)
  out=$(CTL --all status --json --timeout 1000); rc=$?
  el=$(($(nodes_now_ms) - t0))
  [ "$rc" = 0 ] || t_fail "--all status --timeout 1000 with node $V killed exited $rc (after $el ms)"
  inner=$(jq '.elapsed_ms | floor' <<<"$out")
  [ "$inner" -lt 1000 ] || t_fail "the root answered after $inner ms, bound 1000"
  st=$(jq -r --arg v $((V - 1)) '.missing[$v].state // "answered"' <<<"$out")
  case "$st" in silent|down|failing) ;; *) t_fail "killed node id $((V - 1)) is '$st' in the answer" ;; esac
  n=$(jq '.nodes | length' <<<"$out")
  [ "$n" = $((N - 1)) ] || t_fail "$n nodes answered with one killed, expected $((N - 1))"
  t_note "node $V killed: --all status --timeout 1000 answered (root: $inner ms, shufflectl wall $el ms), node id $((V - 1)) '$st', $n answered"
  table=$(CTL --all status --timeout 1000); rc=$?
  [ "$rc" = 4 ] || t_fail "--all status (table) with a node killed exited $rc, expected 4"
  # the silent node keeps its name in the rendezvous (static: its host), not "-"
  grep -qE "^$((V - 1)) +[^ -][^ ]* +(silent|down|failing)" <<<"$table" ||
    t_fail "the table does not mark node id $((V - 1)) with its name: $table"
  # once declared down: listed as such by the root, no deadline waited
  nodes_wait_peer_state 1 $((V - 1)) down $((3 * peer_timeout_ms + 1000)) ||
    t_fail "node 1 never saw node id $((V - 1)) down"
  out=$(CTL --all status --json --timeout 3000) || t_fail "--all status failed"
  st=$(jq -r --arg v $((V - 1)) '.missing[$v].state // "answered"' <<<"$out")
  [ "$st" = down ] || t_fail "node id $((V - 1)) is '$st' after it was declared down"
  # the root never asked it: no deadline (2400 ms here) waited for
  el=$(jq '.elapsed_ms | floor' <<<"$out")
  [ "$el" -lt 1200 ] || t_fail "the root took $el ms with the dead node known down"
  t_note "after the loss was declared: node id $((V - 1)) 'down', the root answered in $el ms"
fi
nodes_down || t_fail "scripts/nodes down failed"
t_note "ok"
