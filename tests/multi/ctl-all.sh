#!/usr/bin/env bash
# tests/multi/ctl-all.sh [nokey] - runtime control --all through the
# daemons' fan-out, by uid (daemon/admin/control.c on every node).
#
# 4 loopback nodes with a cluster key (scripts/nodes' default).  Job
# "ownjob" of uid 65534, one rank per node; job "cutjob" of uid 65534, one
# rank, on node 3 (id 2) only.  Asking node 1:
#  - as uid 65533: --all log-level debug, --all cutoff ownjob 0, --all
#    drain ownjob are refused on every node (exit 1, each node's answer
#    -EPERM), each node counts 3 refusals (ctl_refused) and logs them
#    (WARN naming the uid); nothing changed (log level info, no drain);
#  - as uid 65534, the owner: --all log-level is refused everywhere (root
#    or the daemon's user only); --all drain ownjob drains it on every
#    node (exit 0, 1 session each, ctl_drained 1 each) and every rank's
#    next flush and epoch get -ECANCELED;
#  - as root: --all log-level debug sets it on every node (config: debug,
#    source runtime); --all cutoff cutjob 0 acts on node id 2 only, the
#    others answer "not here" (exit 0), the rank gets -ENOTCONN; --all
#    drain of a job nowhere exits 1 (not here on every node).
# nokey: 2 nodes without a cluster key: control --all is refused by the
# asked daemon (exit 1, "cluster_key" in the words, ctl_refused 1, logged),
# nothing runs anywhere; a read command (--all status) still works.
# Needs root (a root daemon, setpriv to two other uids); exits 77 otherwise.
T="multi-ctl-all${1:+-$1}"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
how=${1:-}
[ "$(id -u)" = 0 ] || t_skip "needs root (root daemons; shufflectl and ranks as other uids via setpriv)"
command -v setpriv >/dev/null || t_skip "setpriv(1) not found"
t_need "$TCLIENT"
OWNER=65534 OTHER=65533
asuser() { echo setpriv --reuid="$1" --regid="$1" --clear-groups; }
$(asuser $OWNER) "$TCLIENT" >/dev/null 2>&1
[ $? = 2 ] || t_skip "the test client cannot run as uid $OWNER (is the build directory readable by everyone?)"

N=4
if [ "$how" = nokey ]; then N=2; t_up -n $N --no-key; else t_up -n $N; fi
find "$NODES_TMP" -type d -exec chmod 755 {} +
chmod 1777 "$NODES_SYNC"
# CTLAS UID ARGS: shufflectl asking node 1 as UID (root: -)
CTLAS() {
  local u=$1; shift
  if [ "$u" = - ]; then "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" "$@"
  else $(asuser "$u") "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET 1)" "$@"; fi
}
fail() { nodes_sync_post drain_go cut_go; t_fail "$@"; }
t_all_up
stat() { nodes_stat "$1" ".daemon.$2"; }
loglevel() { nodes_json "$1" config | jq -r '.config.log_level.value + " " + .config.log_level.source'; }

if [ "$how" = nokey ]; then
  out=$(CTLAS - --all log-level debug 2>&1); rc=$?
  [ "$rc" = 1 ] && grep -q "cluster_key" <<<"$out" || t_fail "--all log-level without a key: exit $rc, not refused naming cluster_key: $out"
  [ "$(stat 1 ctl_refused)" = 1 ] || t_fail "node 1 counted $(stat 1 ctl_refused) refusals, expected 1"
  grep -q "WARN: control: log-level --all refused to uid 0" "$(nodes_var LOG 1)" || t_fail "node 1 did not log the refusal"
  for i in $(seq 1 $N); do
    [ "$(loglevel "$i")" != "debug runtime (shufflectl)" ] || t_fail "node $i's log level changed"
  done
  CTLAS - --all status --json >/dev/null || t_fail "--all status without a key failed"
  t_fault_check_clean
  t_note "no cluster key: control --all refused (exit 1, counted, logged); --all status works"
  nodes_down || t_fail "scripts/nodes down failed"
  t_note "ok"
  exit 0
fi

for r in 0 1 2 3; do
  # shellcheck disable=SC2046
  SHF_JOB=ownjob SHF_WORLD=4 SHF_RANK=$r nodes_client $((r + 1)) "own$r" $(asuser $OWNER) \
    "$TCLIENT" open expect=ok post=own then=ECANCELED hold=drain_go timeout=20000
done
# shellcheck disable=SC2046
SHF_JOB=cutjob SHF_WORLD=1 SHF_RANK=0 nodes_client 3 cut0 $(asuser $OWNER) \
  "$TCLIENT" open expect=ok post=cut then=ENOTCONN hold=cut_go timeout=20000
nodes_sync_wait own.0 own.1 own.2 own.3 cut.0 || fail "the ranks did not open"
t_note "ownjob (4 ranks, one per node) and cutjob (node id 2) of uid $OWNER running"

# refused ASKER WORDS ARGS: exit 1, every node's answer -EPERM with WORDS
refused() {
  local u=$1 words=$2 out rc n
  shift 2
  out=$(CTLAS "$u" --all --json "$@" 2>"$NODES_TMP/err"); rc=$?
  [ "$rc" = 1 ] || fail "uid $u: --all $*: exit $rc, expected 1: $out $(cat "$NODES_TMP/err")"
  n=$(jq --arg w "$words" '[.nodes[] | select(.error == -1 and (.message | contains($w)))] | length' <<<"$out")
  [ "$n" = $N ] || fail "uid $u: --all $*: $n of $N nodes refused with '$words': $out"
  table=$(CTLAS "$u" --all "$@" 2>&1) && fail "uid $u: --all $* (table) exited 0: $table"
  [ "$(grep -cE '^[0-9]+ +[^ ]+ +refused' <<<"$table")" = $N ] || fail "uid $u: --all $* table does not show $N refusals: $table"
}
refused $OTHER "only root or the daemon's user" log-level debug
refused $OTHER "only root or the owner of job ownjob" cutoff ownjob 0
refused $OTHER "only root or the owner of job ownjob" drain ownjob
for i in $(seq 1 $N); do
  # each ran twice (--json and the table)
  [ "$(stat "$i" ctl_refused)" = 6 ] || fail "node $i counted $(stat "$i" ctl_refused) refusals, expected 6"
  [ "$(stat "$i" ctl_drained)" = 0 ] && [ "$(stat "$i" ctl_cutoffs)" = 0 ] || fail "node $i drained or cut off for uid $OTHER"
  for w in "log-level refused to uid $OTHER" "cutoff ownjob refused to uid $OTHER" "drain ownjob refused to uid $OTHER"; do
    grep -q "WARN: control: $w" "$(nodes_var LOG "$i")" || fail "node $i did not log '$w'"
  done
  [ "$(loglevel "$i" | cut -d' ' -f1)" = info ] || fail "node $i's log level is $(loglevel "$i")"
done
t_note "uid $OTHER: log-level, cutoff, drain --all refused on $N nodes, counted and logged; nothing changed"

refused $OWNER "only root or the daemon's user" log-level debug
out=$(CTLAS $OWNER --all --json drain ownjob) || fail "the owner's --all drain ownjob failed: $out"
n=$(jq '[.nodes[] | select(.clients == 1 and .error == null)] | length' <<<"$out")
[ "$n" = $N ] || fail "the owner's drain: $n of $N nodes drained 1 session: $out"
for i in $(seq 1 $N); do
  [ "$(stat "$i" ctl_drained)" = 1 ] || fail "node $i: ctl_drained $(stat "$i" ctl_drained), expected 1"
done
nodes_sync_post drain_go
t_note "uid $OWNER: --all drain ownjob drained 1 session on each of $N nodes"

out=$(CTLAS - --all --json log-level debug) || fail "root's --all log-level debug failed"
for i in $(seq 1 $N); do
  [ "$(loglevel "$i")" = "debug runtime (shufflectl)" ] || fail "node $i's log level after root's --all: $(loglevel "$i")"
done
out=$(CTLAS - --all --json cutoff cutjob 0); rc=$?
[ "$rc" = 0 ] || fail "root's --all cutoff cutjob 0 exited $rc: $out"
acted=$(jq -r '[.nodes | to_entries[] | select(.value.error == null) | .key] | join(",")' <<<"$out")
[ "$acted" = 2 ] || fail "--all cutoff cutjob 0: nodes '$acted' acted, expected 2: $out"
nh=$(jq '[.nodes[] | select(.error == -2)] | length' <<<"$out")
[ "$nh" = $((N - 1)) ] || fail "--all cutoff cutjob 0: $nh nodes said not here, expected $((N - 1)): $out"
table=$(CTLAS - --all cutoff cutjob 0 2>&1); rc=$?
[ "$rc" = 1 ] || fail "a second --all cutoff cutjob 0 (gone now) exited $rc: $table"
[ "$(grep -cE '^[0-9]+ +[^ ]+ +not here' <<<"$table")" = $N ] || fail "the second cutoff's table does not say 'not here' $N times: $table"
nodes_sync_post cut_go
CTLAS - --all drain nosuchjob >/dev/null 2>&1 && fail "--all drain of a job nowhere exited 0"
nodes_wait_all || t_fail "a rank did not get what it expected (ECANCELED for ownjob, ENOTCONN for cutjob)"
for r in 0 1 2 3; do
  grep -q "flush after hold: .*drained by uid $OWNER" "$NODES_TMP/logs/own$r.log" || t_fail "ownjob rank $r's flush does not say drained by uid $OWNER"
done
t_note "root: --all log-level debug on $N nodes; --all cutoff cutjob 0 acted on node id 2 only, others not here"
t_fault_check_clean  # daemons alive, no sanitizer report
nodes_down || t_fail "scripts/nodes down failed"
t_note "ok"
