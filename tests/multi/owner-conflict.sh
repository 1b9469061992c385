#!/usr/bin/env bash
# tests/multi/owner-conflict.sh MODE - a job's owner is checked on every node.
#
# User A (uid 65534) starts rank 0 of job X on node 1 and user B (uid
# 65533) rank 1 of job X on node 2.  The two must never form one job: no
# rank's shf_open() succeeds and zero messages cross between the nodes.
# A node that already knows X refuses the other user locally (-EACCES) and
# the first rank then waits for a world that cannot complete
# (-ETIMEDOUT).  When the joins cross (each node registered its own user
# before hearing of the other), each node sees the other's owner and fails
# its own side: both ranks get -EACCES naming the other uid.
#
# MODE loopback:
#   - plain: started together;
#   - paused: both daemons stopped (SIGSTOP) while the clients connect,
#     continued together 0.5 s later (issue 24, item 4): both ranks must
#     get -EACCES naming the other uid, never READY nor a timeout: the
#     job's home sees both announcements before it confirms any world
#     (wire version 6, docs/protocol-wire.md "Job start"), and tells both
#     sides;
#   - control: the same, paused, with one uid on both nodes: the job forms;
#   - world: the same, paused, one uid, but world 2 on node 1 and world 3
#     on node 2: both ranks get -EINVAL naming the other's world.
# MODE netns: the joins cross for certain: node 1's link is down while
#   both ranks register, then comes back; both must fail with -EACCES.
# Needs root (setpriv to two other uids); exits 77 otherwise.
T=multi-owner-conflict-$1
mode=$1
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
[ "$(id -u)" = 0 ] || t_skip "needs root (clients run as two other uids via setpriv)"
command -v setpriv >/dev/null || t_skip "setpriv(1) not found"
t_need "$TCLIENT"
UA=65534 UB=65533
# asuser UID: the command prefix that runs a program as UID
asuser() { echo setpriv --reuid="$1" --regid="$1" --clear-groups; }
$(asuser "$UA") "$TCLIENT" >/dev/null 2>&1
[ $? = 2 ] || t_skip "the test client cannot run as uid $UA (is the build directory readable by everyone?)"

t_up --mode "$mode" -n 2
# the other uids must reach the daemons' sockets and the sync directory
find "$NODES_TMP" -type d -exec chmod 755 {} +
chmod 1777 "$NODES_SYNC"

# moved: messages that crossed between the nodes so far (both ways)
moved() {
  local i s=0 v
  for i in 1 2; do
    v=$(nodes_stat "$i" '.daemon.batch_msgs_in') || t_fail "node $i: no stats"
    s=$((s + v))
  done
  echo "$s"
}

# start JOB UID1 UID2 EXPECT [TIMEOUT]: rank 0 on node 1 as UID1, rank 1 on
# node 2 as UID2, both tclient open (world 2) expecting EXPECT; ok: traffic
start() {
  local job=$1 u1=$2 u2=$3 exp=$4 tmo=${5:-4000}
  local args=(open "expect=$exp" "timeout=$tmo")
  [ "$exp" = ok ] && args=(traffic n=300 rounds=2 timeout=20000)
  # shellcheck disable=SC2046
  SHF_JOB=$job SHF_WORLD=2 SHF_RANK=0 nodes_client 1 "$job.0" $(asuser "$u1") "$TCLIENT" "${args[@]}"
  # shellcheck disable=SC2046
  SHF_JOB=$job SHF_WORLD=2 SHF_RANK=1 nodes_client 2 "$job.1" $(asuser "$u2") "$TCLIENT" "${args[@]}"
}

# backlog I: connections waiting in node I's daemon's accept queue
backlog() {
  ss -xlnH src "$(nodes_var SOCKET "$1")" 2>/dev/null | awk '{ print $3; exit }' | grep . || echo 0
}

# paused ARGS: start ARGS with both daemons stopped until both clients
# have connected (each waits in its stopped daemon's accept queue), then
# 0.5 s more
paused() {
  local p1 p2 end
  p1=$(nodes_var PID 1) p2=$(nodes_var PID 2)
  kill -STOP "$p1" "$p2" || t_fail "cannot stop the daemons"
  start "$@"
  end=$(( $(nodes_now_ms) + 20000 ))
  until [ "$(backlog 1)" -ge 1 ] && [ "$(backlog 2)" -ge 1 ]; do
    [ "$(nodes_now_ms)" -lt "$end" ] || { kill -CONT "$p1" "$p2"; t_fail "the clients never connected"; }
    sleep 0.05
  done
  sleep 0.5
  kill -CONT "$p1" "$p2"
}

# refused JOB: both ranks failed (EACCES or ETIMEDOUT), at least one with
# EACCES; each EACCES names the other user; nothing crossed
refused() {
  local job=$1 n=0 m
  grep -q 'permission denied' "$NODES_TMP/logs/$job.0.log" && {
    n=$((n + 1)); grep -q "uid $UB" "$NODES_TMP/logs/$job.0.log" || t_fail "$job: rank 0's error does not name uid $UB"; }
  grep -q 'permission denied' "$NODES_TMP/logs/$job.1.log" && {
    n=$((n + 1)); grep -q "uid $UA" "$NODES_TMP/logs/$job.1.log" || t_fail "$job: rank 1's error does not name uid $UA"; }
  [ "$n" -ge 1 ] || t_fail "$job: neither rank was refused with EACCES"
  m=$(moved)
  [ "$m" = 0 ] || t_fail "$job: $m message(s) crossed between two users' jobs"
  REFUSED=$n
}

if [ "$mode" = loopback ]; then
  start xplain "$UA" "$UB" EACCES,ETIMEDOUT
  nodes_wait_all || t_fail "plain: a rank's shf_open did not fail with EACCES or ETIMEDOUT"
  refused xplain
  t_note "plain: $REFUSED rank(s) refused with EACCES, the others timed out; nothing moved"

  paused xpause "$UA" "$UB" EACCES
  nodes_wait_all || t_fail "paused: a rank's shf_open did not fail with EACCES (READY or a timeout instead)"
  refused xpause
  [ "$REFUSED" = 2 ] || t_fail "paused: only $REFUSED rank refused with EACCES"
  t_note "paused: both ranks refused with EACCES, each naming the other uid; nothing moved"

  paused xsame "$UA" "$UA" ok
  nodes_wait_all || t_fail "control: one uid on both nodes must form the job"
  m=$(moved)
  [ "$m" -gt 0 ] || t_fail "control: no message crossed"
  t_note "control: same uid on both nodes: ok ($m messages crossed)"

  # a world mismatch across nodes: both sides told (-EINVAL), never READY
  p1=$(nodes_var PID 1) p2=$(nodes_var PID 2)
  kill -STOP "$p1" "$p2" || t_fail "cannot stop the daemons"
  # shellcheck disable=SC2046
  SHF_JOB=xworld SHF_WORLD=2 SHF_RANK=0 nodes_client 1 xworld.0 $(asuser "$UA") "$TCLIENT" open expect=EINVAL timeout=4000
  # shellcheck disable=SC2046
  SHF_JOB=xworld SHF_WORLD=3 SHF_RANK=1 nodes_client 2 xworld.1 $(asuser "$UA") "$TCLIENT" open expect=EINVAL timeout=4000
  end=$(( $(nodes_now_ms) + 20000 ))
  until [ "$(backlog 1)" -ge 1 ] && [ "$(backlog 2)" -ge 1 ]; do
    [ "$(nodes_now_ms)" -lt "$end" ] || { kill -CONT "$p1" "$p2"; t_fail "world: the clients never connected"; }
    sleep 0.05
  done
  sleep 0.5
  kill -CONT "$p1" "$p2"
  nodes_wait_all || t_fail "world: a rank's shf_open did not fail with EINVAL"
  grep -q 'world 3' "$NODES_TMP/logs/xworld.0.log" || t_fail "world: rank 0's error does not name world 3"
  grep -q 'world 2' "$NODES_TMP/logs/xworld.1.log" || t_fail "world: rank 1's error does not name world 2"
  t_note "world: worlds 2 and 3 on two nodes: both ranks refused with EINVAL, each naming the other's world"
else
  # registered I JOB: node I has a client of JOB
  registered() { [ "$(nodes_json "$1" clients | jq --arg j "$2" '[.clients[] | select(.job == $j)] | length')" -ge 1 ]; }
  # conflicted I JOB: node I failed JOB for an owner conflict
  conflicted() { [ "$(nodes_json "$1" jobs | jq --arg j "$2" '[.jobs[] | select(.name == $j and .conflict_uid != null)] | length')" -ge 1 ]; }
  nodes link --node 1 down || t_fail "cannot take node 1's link down"
  start xcross "$UA" "$UB" EACCES 30000
  # xrun: a world of 1 on each node, so each is running when the joins
  # cross; then its flush and epoch must fail with EACCES
  run=(open timeout=20000 hold=go then=EACCES)
  # shellcheck disable=SC2046
  SHF_JOB=xrun SHF_WORLD=1 SHF_RANK=0 nodes_client 1 xrun.0 $(asuser "$UA") "$TCLIENT" "${run[@]}"
  # shellcheck disable=SC2046
  SHF_JOB=xrun SHF_WORLD=1 SHF_RANK=0 nodes_client 2 xrun.1 $(asuser "$UB") "$TCLIENT" "${run[@]}"
  t_until 20000 "all ranks registered" eval 'registered 1 xcross && registered 2 xcross && registered 1 xrun && registered 2 xrun'
  nodes link --node 1 up || t_fail "cannot bring node 1's link up"
  t_until 30000 "the running job failed on both nodes" eval 'conflicted 1 xrun && conflicted 2 xrun'
  nodes_sync_post go
  nodes_wait_all || t_fail "crossed joins: every rank must fail with EACCES"
  refused xcross
  [ "$REFUSED" = 2 ] || t_fail "crossed joins: only $REFUSED rank refused"
  for k in 0 1; do
    grep -q 'epoch after hold: permission denied' "$NODES_TMP/logs/xrun.$k.log" ||
      t_fail "xrun: rank on node $((k + 1)): its epoch did not fail with EACCES"
  done
  for i in 1 2; do
    c=$(nodes_stat "$i" '.daemon.owner_conflicts')
    [ "$c" -ge 1 ] 2>/dev/null || t_fail "node $i counted no owner conflict (owner_conflicts=$c)"
  done
  t_note "crossed joins: both ranks refused with EACCES, nothing moved"
fi
t_daemons_alive
