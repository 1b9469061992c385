#!/usr/bin/env bash
# tests/multi/top-all.sh - shufflectl top --all: every node's top through
# the daemons' fan-out (daemon/admin/fanout.c), checked against known traffic.
#
# 4 loopback nodes, job "topall" of 8 ranks (2 per node, tclient traffic,
# flushes and epochs), held open once done.  Then, asking node 1:
#  - `top --all --once --json`: 4 nodes answered, none missing; each
#    node's row has clients 2, msgs_total (messages taken from its ranks'
#    send rings) equal to what its two ranks report sent and
#    msgs_out_total equal to what they report delivered; the job's row on
#    each node has local 2 and the same counts; no message moved in the
#    interval (msgs 0: the traffic was over) and nothing dropped; the
#    totals row adds up to the whole job's sent and delivered;
#  - the table form lists the 4 nodes and a total row and exits 0;
# then node 3 (id 2) is killed: `top --all --once --json --timeout 2000`
# answers within its bound (each sample: the root's elapsed_ms < 2000), lists node id 2 missing (silent, down or
# failing) and the 3 others; the table form marks it and exits 4.
T=multi-top-all
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=4 K=2 W=8
t_up -n $N --daemon-args "--peer-timeout-ms 3000 --heartbeat-ms 200"
CTL() { "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" "$@"; }

t_all_up

export SHF_JOB=topall
for r in $(seq 0 $((W - 1))); do
  SHF_RANK=$r SHF_WORLD=$W nodes_client $((r / K + 1)) "rank$r" "$TCLIENT" traffic n=300 rounds=2 \
    minlen=48 maxlen=200 seed=11 hold=release
done
for r in $(seq 0 $((W - 1))); do
  nodes_sync_wait "held.$r" || { nodes_sync_post release; t_fail "rank $r never finished"; }
done
# what each rank says it sent and got (tclient checked them against its
# own shf_stats_get)
declare -A sent got
tot_sent=0 tot_got=0
for r in $(seq 0 $((W - 1))); do
  read -r s g < <(sed -n 's/^rank [0-9]*: sent \([0-9]*\) delivered \([0-9]*\) .*/\1 \2/p' "$NODES_TMP/logs/rank$r.log")
  [ -n "$s" ] || { nodes_sync_post release; t_fail "rank $r did not report its counts"; }
  n=$((r / K))
  sent[$n]=$((${sent[$n]:-0} + s)) got[$n]=$((${got[$n]:-0} + g))
  tot_sent=$((tot_sent + s)) tot_got=$((tot_got + g))
done
t_note "$W ranks done: $tot_sent sent, $tot_got delivered"

out=$(CTL top --all --once --json --interval 300) || { nodes_sync_post release; t_fail "top --all --once --json failed"; }
fail() { nodes_sync_post release; t_fail "$@"; }
[ "$(jq -r '.command + " " + (.all | tostring)' <<<"$out")" = "top true" ] || fail "top --all: not a top --all document: $out"
[ "$(jq '.nodes | length' <<<"$out")" = $N ] && [ "$(jq '.missing | length' <<<"$out")" = 0 ] ||
  fail "top --all: $(jq '.nodes | length' <<<"$out") nodes answered, missing $(jq -c .missing <<<"$out")"
for n in $(seq 0 $((N - 1))); do
  read -r id cl mt mo m dr jl jt jo < <(jq -r --arg n "$n" '.nodes[$n] as $x | ($x.jobs[] | select(.name == "topall")) as $j |
      [$x.node_id, $x.node.clients, $x.node.msgs_total, $x.node.msgs_out_total, $x.node.msgs, $x.node.drops,
       $j.local, $j.msgs_total, $j.msgs_out_total] | @tsv' <<<"$out")
  [ "$id" = "$n" ] || fail "top --all: the row under $n is node '$id'"
  [ "$cl" = $K ] && [ "$jl" = $K ] || fail "node id $n: clients $cl, job local $jl (expected $K)"
  [ "$mt" = "${sent[$n]}" ] && [ "$jt" = "${sent[$n]}" ] ||
    fail "node id $n: msgs_total $mt, job $jt; its ranks sent ${sent[$n]}"
  [ "$mo" = "${got[$n]}" ] && [ "$jo" = "${got[$n]}" ] ||
    fail "node id $n: msgs_out_total $mo, job $jo; its ranks got ${got[$n]}"
  [ "$m" = 0 ] && [ "$dr" = 0 ] || fail "node id $n: $m messages, $dr drops in the interval after the traffic"
  t_note "node id $n: clients $cl, msgs_total $mt (sent ${sent[$n]}), msgs_out_total $mo (got ${got[$n]}), interval msgs $m"
done
read -r ts tg tc < <(jq -r '[.totals.msgs_total, .totals.msgs_out_total, .totals.clients] | @tsv' <<<"$out")
[ "$ts" = "$tot_sent" ] && [ "$tg" = "$tot_got" ] && [ "$tc" = $W ] ||
  fail "top --all totals: msgs_total $ts, msgs_out_total $tg, clients $tc (expected $tot_sent, $tot_got, $W)"
table=$(CTL top --all --once --interval 200); rc=$?
[ "$rc" = 0 ] || fail "top --all --once (table) exited $rc: $table"
for n in $(seq 0 $((N - 1))); do
  grep -qE "^$n +[^ ]+ +topall " <<<"$table" || fail "the table has no topall row for node id $n: $table"
done
grep -qE "^total " <<<"$table" || fail "the table has no total row: $table"
t_note "top --all: $N nodes, counts as sent; table ok"
nodes_sync_post release
nodes_wait_all || t_fail "a rank failed"

V=3
nodes kill --node $V --signal KILL || t_fail "cannot kill node $V"
T_KILLED="$V"
t0=$(nodes_now_ms)
out=$(CTL top --all --once --json --timeout 2000 --interval 100); rc=$?
el=$(($(nodes_now_ms) - t0))
[ "$rc" = 0 ] || t_fail "top --all --once --json --timeout 2000 with node $V killed exited $rc after $el ms"
st=$(jq -r --arg v $((V - 1)) '.missing[$v].state // "answered"' <<<"$out")
case "$st" in silent|down|failing) ;; *) t_fail "killed node id $((V - 1)) is '$st' in top --all" ;; esac
[ "$(jq '.nodes | length' <<<"$out")" = $((N - 1)) ] || t_fail "top --all with a node killed: $(jq '.nodes | length' <<<"$out") answered"
inner=$(jq '.elapsed_ms | floor' <<<"$out")
[ "$inner" -lt 2000 ] || t_fail "top --all's second sample: the root answered after $inner ms, bound 2000"
table=$(CTL top --all --once --timeout 2000 --interval 100); rc=$?
[ "$rc" = 4 ] || t_fail "top --all (table) with a node killed exited $rc, expected 4: $table"
# (the silent node keeps its name in the rendezvous: static: its host)
grep -qE "^$((V - 1)) +[^ (]+ \((silent|down|failing)\)" <<<"$table" ||
  t_fail "the table does not mark node id $((V - 1)) with its name: $table"
t_note "node $V killed: top --all answered in $el ms (two samples; the root's elapsed_ms of the second: $inner), node id $((V - 1)) '$st'"
t_fault_check_clean  # the survivors alive, no sanitizer report
nodes_down || t_fail "scripts/nodes down failed"
t_note "ok"
