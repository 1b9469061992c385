#!/bin/bash
# tests/slurm/slurm-scripts.sh - scripts/slurm-prolog and slurm-epilog run
# as slurmd runs them: as root, with exactly the environment slurmd 22.05
# builds for a Prolog/Epilog (src/slurmd/slurmd/req.c _build_env: no PATH,
# so bash's default, with the stand-ins below in front,
# SLURM_SCRIPT_CONTEXT=prolog_slurmd/epilog_slurmd, SLURMD_NODENAME,
# SLURM_JOB_ID/JOBID, SLURM_JOB_UID/UID, SLURM_JOB_GID, SLURM_JOB_USER,
# SLURM_NODELIST, SLURM_JOB_PARTITION, SLURM_CLUSTER_NAME, ... and from the
# job's credential SLURM_JOB_COMMENT / SLURM_JOB_CONSTRAINTS when set) and
# for a TaskProlog (as the job's user, SLURM_SCRIPT_CONTEXT=prolog_task).
# The real shuffled and shufflectl; the daemon runs as the job's user
# (nobody).  The ONLY stand-in: `scontrol` and `scancel` on PATH
# (tests/slurm/bin), which expand comma-separated node lists for `scontrol
# show hostnames` and record `scontrol requeuehold` / `scancel` calls in
# $CALLS instead of talking to a slurmctld (there is none here).
#
# Checks:
#   - a job that did not opt in: Prolog exit 0, no directory, no daemon;
#     TaskProlog prints nothing; Epilog exit 0;
#   - a job that opted in (--comment): a daemon running as the job's user,
#     in the job's extern-step cgroup when one exists (a real cgroup made
#     here, v1 or v2, when this machine lets root make one), reachable by
#     the job's user through the TaskProlog's exported environment; the
#     Epilog stops it and removes the directory;
#   - SHUFFLE_DEFAULT=always + --comment=noshuffle: nothing;
#     SHUFFLE_PARTITIONS: the partition's job gets a daemon;
#   - a failing start (bad SHUFFLE_OPTS) of an opted-in job: exit 0 and
#     `scontrol requeuehold JOB`; when requeue is refused, `scancel JOB`;
#     with SHUFFLE_ON_FAIL=drain: exit 1 and neither;
#   - the job's fabric port already taken: exit 0, requeuehold, and the
#     message names the port.
# Needs root (setpriv to the job's user, chown); exit 77 otherwise.
set -u

fail() {
	echo "slurm-scripts: FAIL: $*" >&2
	for f in "$T"/run/slurm-*/shuffled.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}
skip() {
	echo "slurm-scripts: SKIP: $*" >&2
	exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (the Prolog runs as root and starts the daemon as the job's user)"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
src=${SHF_TEST_SOURCE_DIR:?}
shuffled=${SHF_TEST_SHUFFLED:?}
shufflectl=${SHF_TEST_SHUFFLECTL:?}
# the configured copies (scripts/slurm-*.in with this build's paths)
prolog=${SHF_TEST_BUILD_DIR:?}/scripts/slurm-prolog
epilog=$SHF_TEST_BUILD_DIR/scripts/slurm-epilog
user=nobody
uid=$(id -u $user) || skip "no user $user"
gid=$(id -g $user)

T=$(mktemp -d /tmp/shf-slurm-XXXXXX)
chmod 0755 "$T" # the job's user reaches its directory below
CALLS=$T/calls
: >"$CALLS"
# the test's cgroups (make_cgroup) live under this, in one hierarchy
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	cgtop=/sys/fs/cgroup/shf-test-$$
else
	cgtop=/sys/fs/cgroup/pids/shf-test-$$
fi
cleanup() {
	local p
	# shellcheck disable=SC2013 # one pid per file
	for p in $(cat "$T"/run/slurm-*/shuffled.pid 2>/dev/null); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = shuffled ] && kill -KILL "$p" 2>/dev/null
	done
	[ -n "$listener" ] && kill "$listener" 2>/dev/null
	# empty once the daemons are gone (the epilog, or the kill above)
	[ -d "$cgtop" ] && find "$cgtop" -depth -type d -exec rmdir {} + 2>/dev/null
	rm -rf "$T"
}
listener=
trap cleanup EXIT

node=$(hostname -s)
[[ $node =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || node=localhost

# slurmd's environment for a Prolog/Epilog of job $1 (context $2), plus
# NAME=value words after; the settings point the scripts at this build
slurm_env() {
	local job=$1 ctx=$2
	shift 2
	echo SLURM_SCRIPT_CONTEXT="$ctx" SLURMD_NODENAME="$node" SLURM_CONF=/etc/slurm/slurm.conf \
		SLURM_CLUSTER_NAME=testcluster SLURM_JOB_ID="$job" SLURM_JOBID="$job" \
		SLURM_JOB_UID="$uid" SLURM_UID="$uid" SLURM_JOB_GID="$gid" SLURM_JOB_USER="$user" \
		SLURM_JOB_WORK_DIR=/tmp SLURM_NODELIST="$node" SLURM_JOB_PARTITION=debug \
		SLURM_JOB_ACCOUNT=acct SLURM_JOB_NUM_NODES=1 SLURM_JOB_CPUS_PER_NODE=1 \
		SLURM_JOB_NTASKS=1 "$@"
}
# slurmd sets no PATH: bash then uses its built-in default, which the
# stand-ins go in front of
# shellcheck disable=SC2016 # the child shell expands it
bash_path=$(env -i /bin/bash -c 'echo "$PATH"')
settings=(PATH="$src/tests/slurm/bin:$bash_path" CALLS="$CALLS" SHUFFLE_SHUFFLED="$shuffled"
	SHUFFLE_SHUFFLECTL="$shufflectl" SHUFFLE_RUN_BASE="$T/run" SHUFFLE_START_TIMEOUT=20)

# run_prolog JOB [NAME=value...]: status in $rc, stderr in $T/err
run_prolog() {
	local job=$1
	shift
	# shellcheck disable=SC2046 # slurm_env prints NAME=value words
	env -i "${settings[@]}" $(slurm_env "$job" prolog_slurmd "$@") \
		"$prolog" >"$T/out" 2>"$T/err"
	rc=$?
}
run_epilog() {
	local job=$1
	shift
	# shellcheck disable=SC2046
	env -i "${settings[@]}" $(slurm_env "$job" epilog_slurmd "$@") \
		"$epilog" >"$T/out" 2>"$T/err"
	rc=$?
}
# the TaskProlog's output, run as the job's user
run_taskprolog() {
	local job=$1
	env -i PATH=/usr/bin:/bin SLURM_SCRIPT_CONTEXT=prolog_task SLURM_JOB_ID="$job" \
		SLURM_JOBID="$job" SLURM_STEP_ID=0 SLURM_STEPID=0 SLURM_JOB_NODELIST="$node" \
		SLURM_JOB_UID="$uid" SLURM_JOB_USER="$user" SLURMD_NODENAME="$node" \
		SHUFFLE_RUN_BASE="$T/run" \
		setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$prolog"
}
# is pid $1 a live shuffled (not a zombie: the daemon's parent, the Prolog,
# is gone, and whoever inherits it may reap it late)
alive() {
	local st
	st=$(sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$(cat /proc/"$1"/comm 2>/dev/null)" = shuffled ]
}
daemon_pid() {
	cat "$T/run/slurm-$1/shuffled.pid" 2>/dev/null
}
no_daemon_for() {
	[ ! -e "$T/run/slurm-$1" ] || fail "job $1: $T/run/slurm-$1 exists: $(ls -la "$T/run/slurm-$1")"
	! pgrep -f -- "--runtime-dir=$T/run/slurm-$1" >/dev/null ||
		fail "job $1: a shuffled runs: $(pgrep -af -- "--runtime-dir=$T/run/slurm-$1")"
}

# A real cgroup for the extern step of job $1, as Slurm makes it with
# PrologFlags=Contain, if root may make one here: cgroup v2
# (<root>/system.slice/slurmstepd.scope/job_J/step_extern/user/task_special)
# or v1 (<root>/pids/slurm/uid_U/job_J/step_extern).  Prints the leaf.
make_cgroup() {
	local job=$1
	[ -d "$(dirname "$cgtop")" ] && mkdir "$cgtop" 2>/dev/null || return 1
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		mkdir -p "$cgtop/job_$job/step_extern/user/task_special" || return 1
		echo "$cgtop/job_$job/step_extern/user/task_special"
	else
		mkdir -p "$cgtop/uid_$uid/job_$job/step_extern" || return 1
		echo "$cgtop/uid_$uid/job_$job/step_extern"
	fi
}

# job ids of this run (a cgroup or directory left by another run must not match)
jb=$((($$ % 90000 + 10000) * 10))

# ---- 1. no opt-in: nothing
job=$((jb + 1))
run_prolog $job
[ "$rc" = 0 ] || fail "prolog without opt-in: exit $rc: $(cat "$T/err")"
no_daemon_for $job
out=$(run_taskprolog $job)
[ -z "$out" ] || fail "TaskProlog of a job without a daemon printed '$out'"
run_epilog $job
[ "$rc" = 0 ] || fail "epilog without a daemon: exit $rc: $(cat "$T/err")"
grep -q . "$CALLS" && fail "scontrol/scancel called for a job that did not opt in: $(cat "$CALLS")"
echo "slurm-scripts: no opt-in: nothing started, exit 0"

# ---- 2. opt-in by comment: a daemon for the user, in the job's cgroup
job=$((jb + 2))
cg=$(make_cgroup $job) || cg=
run_prolog $job SLURM_JOB_COMMENT=big-run,shuffle
[ "$rc" = 0 ] || fail "prolog with --comment=shuffle: exit $rc: $(cat "$T/err")"
pid=$(daemon_pid $job)
alive "$pid" || fail "job $job: no shuffled (pid '$pid')"
duid=$(awk '/^Uid:/ {print $2}' /proc/"$pid"/status)
[ "$duid" = "$uid" ] || fail "job $job: the daemon runs as uid $duid, not the job's $uid"
if [ -n "$cg" ]; then
	grep -qxF "$pid" "$cg/cgroup.procs" ||
		fail "job $job: the daemon (pid $pid) is not in the job's cgroup $cg: $(cat /proc/"$pid"/cgroup)"
	echo "slurm-scripts: the daemon is in the job's extern-step cgroup ${cg#/sys/fs/cgroup/}"
else
	echo "slurm-scripts: NOTE: root cannot make a cgroup here; cgroup placement not exercised" >&2
	grep -q "no cgroup of the job's extern step" "$T/run/slurm-$job/shuffled.log" ||
		fail "job $job: the log does not say the daemon is outside the job's cgroup"
fi
out=$(run_taskprolog $job)
[ "$out" = "export SHF_RUNTIME_DIR=$T/run/slurm-$job" ] || fail "TaskProlog printed '$out'"
# the job's task: the environment the TaskProlog exported, as the job's user
ping=$(env -i PATH=/usr/bin:/bin "${out#export }" \
	setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$shufflectl" ping 2>&1) ||
	fail "the job's user cannot reach its daemon: $ping"
case $ping in "pong (pid $pid,"*) ;; *) fail "ping answered '$ping'" ;; esac
# another user cannot
if setpriv --reuid=$((uid - 1)) --regid="$gid" --clear-groups -- \
	"$shufflectl" -s "$T/run/slurm-$job/shuffled.sock" ping >/dev/null 2>&1; then
	fail "uid $((uid - 1)) reached job $job's daemon"
fi
run_epilog $job
[ "$rc" = 0 ] || fail "epilog: exit $rc: $(cat "$T/err")"
! alive "$pid" || fail "epilog left shuffled (pid $pid) running"
no_daemon_for $job
grep -q . "$CALLS" && fail "scontrol/scancel called for a healthy job: $(cat "$CALLS")"
echo "slurm-scripts: opt-in: daemon as uid $uid reached through the TaskProlog's env; epilog cleaned up"

# ---- 3. SHUFFLE_DEFAULT=always, noshuffle; SHUFFLE_PARTITIONS
job=$((jb + 3))
run_prolog $job SHUFFLE_DEFAULT=always SLURM_JOB_COMMENT=noshuffle
[ "$rc" = 0 ] || fail "always + noshuffle: exit $rc: $(cat "$T/err")"
no_daemon_for $job
job=$((jb + 4))
run_prolog $job SHUFFLE_PARTITIONS=batch,debug
[ "$rc" = 0 ] || fail "SHUFFLE_PARTITIONS: exit $rc: $(cat "$T/err")"
pid=$(daemon_pid $job)
alive "$pid" || fail "job $job (partition debug): no daemon"
run_epilog $job
[ "$rc" = 0 ] || fail "epilog: exit $rc: $(cat "$T/err")"
no_daemon_for $job
echo "slurm-scripts: SHUFFLE_DEFAULT=always honours noshuffle; SHUFFLE_PARTITIONS opts a partition in"

# ---- 4. a failing start: the job is requeued and held, the node stays up
job=$((jb + 5))
: >"$CALLS"
run_prolog $job SLURM_JOB_COMMENT=shuffle SHUFFLE_OPTS=--no-such-option
[ "$rc" = 0 ] || fail "failed start, SHUFFLE_ON_FAIL=hold: exit $rc (want 0): $(cat "$T/err")"
grep -qx "scontrol requeuehold $job" "$CALLS" || fail "no requeuehold: calls '$(cat "$CALLS")'"
grep -q "scancel" "$CALLS" && fail "scancel after a successful requeuehold"
grep -q "shuffled exited during start-up" "$T/err" || fail "no reason given: $(cat "$T/err")"
no_daemon_for $job
# requeue refused (an salloc allocation): cancelled instead
: >"$CALLS"
run_prolog $job SLURM_JOB_COMMENT=shuffle SHUFFLE_OPTS=--no-such-option FAKE_REQUEUE_FAIL=1
[ "$rc" = 0 ] || fail "failed start, requeue refused: exit $rc: $(cat "$T/err")"
grep -qx "scancel $job" "$CALLS" || fail "no scancel after a refused requeue: '$(cat "$CALLS")'"
no_daemon_for $job
# the admin asked for Slurm's own rule: fail the Prolog (drain)
: >"$CALLS"
run_prolog $job SLURM_JOB_COMMENT=shuffle SHUFFLE_OPTS=--no-such-option SHUFFLE_ON_FAIL=drain
drain_rc=$rc
[ "$drain_rc" != 0 ] || fail "failed start, SHUFFLE_ON_FAIL=drain: exit 0"
grep -qE "requeue|scancel" "$CALLS" && fail "drain also called '$(cat "$CALLS")'"
no_daemon_for $job
# and a job that did not opt in is not touched by the same bad setting
: >"$CALLS"
run_prolog $job SHUFFLE_OPTS=--no-such-option SHUFFLE_ON_FAIL=drain
[ "$rc" = 0 ] || fail "bad SHUFFLE_OPTS failed a job that did not opt in: exit $rc"
grep -q . "$CALLS" && fail "touched a job that did not opt in: $(cat "$CALLS")"
echo "slurm-scripts: failed start: requeuehold (exit 0), scancel when refused, exit $drain_rc only with drain"

# ---- 5. the job's fabric port is taken
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])')
python3 -c "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', $port)); s.listen(); time.sleep(120)" &
listener=$!
for _ in $(seq 100); do
	ss -Htln "sport = :$port" | grep -q . && break
	sleep 0.05
done
ss -Htln "sport = :$port" | grep -q . || fail "the test's listener on port $port did not come up"
job=$((jb + 6))
: >"$CALLS"
run_prolog $job SLURM_JOB_COMMENT=shuffle SLURM_NODELIST="$node,othernode" SLURM_JOB_NUM_NODES=2 \
	SHUFFLE_PORT_BASE="$port" SHUFFLE_PORT_RANGE=1
[ "$rc" = 0 ] || fail "port taken: exit $rc: $(cat "$T/err")"
grep -q "fabric port $port .* is in use on $node" "$T/err" || fail "port not named: $(cat "$T/err")"
grep -qx "scontrol requeuehold $job" "$CALLS" || fail "port taken: no requeuehold: '$(cat "$CALLS")'"
no_daemon_for $job
echo "slurm-scripts: port $port taken: reported, job requeued and held"
echo "slurm-scripts: OK"
