#!/bin/bash
# tests/slurm/slurm-service.sh - the Slurm Prolog/Epilog beside the system
# service on one node (issue 23, item 1), with their defaults:
#   - the service's runtime directory /run/shuffle belongs to the service's
#     user (what RuntimeDirectory=shuffle does), and the service's INI file
#     (the daemon's compiled-in default, SYSCONFDIR/shuffle/shuffled.conf)
#     names a cluster_key only the service's user may read, as
#     docs/operations.md tells admins to set it up;
#   - a real service daemon runs there as that user;
#   - an opted-in job's Prolog, with no SHUFFLE_RUN_BASE and no
#     SHUFFLE_CONFIG, must start the job's daemon anyway: outside
#     /run/shuffle, without reading the service's file; it reads
#     SYSCONFDIR/shuffle/slurm.conf instead when that exists;
#   - stopping the service (its runtime directory deleted) leaves the job's
#     daemon running and reachable, and the Epilog stops only the job's.
# Everything lives in a private mount namespace: /run/shuffle,
# /run/shuffle-slurm and SYSCONFDIR/shuffle are tmpfs mounts of this test,
# so this machine's own files and daemons are never seen or touched.
# Needs root (mounts, setpriv, chown): exit 77 otherwise.
set -u
T=slurm-service
fail() {
	echo "$T: FAIL: $*" >&2
	for f in /run/shuffle-slurm/slurm-*/shuffled.log "$W"/svc/svc.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}
skip() {
	echo "$T: SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (mount namespace, setpriv, chown)"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
if [ -z "${SHF_SVC_IN_NS:-}" ]; then
	unshare --mount --propagation private true 2>/dev/null ||
		skip "cannot create a mount namespace here (unshare --mount)"
	exec env SHF_SVC_IN_NS=1 unshare --mount --propagation private "$0" "$@"
fi
src=${SHF_TEST_SOURCE_DIR:?}
shuffled=${SHF_TEST_SHUFFLED:?}
shufflectl=${SHF_TEST_SHUFFLECTL:?}
prolog=${SHF_TEST_BUILD_DIR:?}/scripts/slurm-prolog
epilog=$SHF_TEST_BUILD_DIR/scripts/slurm-epilog
user=nobody
uid=$(id -u $user) || skip "no user $user"
gid=$(id -g $user)
# the service's user: the packaged one when it exists, else "daemon"
svc=shuffle
getent passwd $svc >/dev/null || svc=daemon
svcuid=$(id -u $svc) || skip "no user $svc"

# the daemon's default INI file, as this build was configured
cfgdef=$("$shuffled" --help | sed -n 's/.*else \$SHF_CONFIG, else \(\/[^ ]*\)$/\1/p')
[ -n "$cfgdef" ] || fail "cannot read the default INI file from shuffled --help"
cfgdir=$(dirname "$cfgdef")

W=$(mktemp -d /tmp/shf-slurmsvc-XXXXXX)
chmod 0755 "$W"
made_cfgdir=
svc_pid=
cleanup() {
	local p
	for p in $(cat /run/shuffle-slurm/slurm-*/shuffled.pid 2>/dev/null) $svc_pid; do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = shuffled ] && kill -KILL "$p" 2>/dev/null
	done
	umount "$cfgdir" /run/shuffle /run/shuffle-slurm 2>/dev/null
	[ -n "$made_cfgdir" ] && rmdir "$cfgdir" 2>/dev/null
	rmdir /run/shuffle /run/shuffle-slurm 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

if [ ! -d "$cfgdir" ]; then
	mkdir -p "$cfgdir" || skip "cannot make $cfgdir"
	made_cfgdir=1
fi
mount -t tmpfs -o mode=0755 tmpfs "$cfgdir" || skip "cannot mount a tmpfs on $cfgdir"
mkdir -p /run/shuffle /run/shuffle-slurm
mount -t tmpfs -o mode=0755 tmpfs /run/shuffle || skip "cannot mount a tmpfs on /run/shuffle"
mount -t tmpfs -o mode=0755 tmpfs /run/shuffle-slurm || skip "cannot mount a tmpfs on /run/shuffle-slurm"
chown "$svcuid:$svcuid" /run/shuffle # RuntimeDirectory=shuffle, User=$svc

# the service's setup, as operations.md describes it
head -c 32 /dev/urandom >"$cfgdir/cluster.key"
chown "$svcuid:$svcuid" "$cfgdir/cluster.key"
chmod 0600 "$cfgdir/cluster.key"
cat >"$cfgdef" <<EOF
[shuffled]
cluster_key = $cfgdir/cluster.key
EOF

node=$(hostname -s)
[[ $node =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || node=localhost

# the service daemon, as its unit starts it (--runtime-dir: the user
# "daemon" is not the build's system user, which would take /run/shuffle
# from RUNTIME_DIRECTORY by itself)
mkdir "$W/svc" && chown "$svcuid:$svcuid" "$W/svc" # LogsDirectory=
setpriv --reuid="$svcuid" --regid="$svcuid" --clear-groups \
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin RUNTIME_DIRECTORY=/run/shuffle \
	"$shuffled" --node-name="$node" --runtime-dir="/run/shuffle/$node" --log-file="$W/svc/svc.log" >"$W/svc.out" 2>&1 &
svc_pid=$!
svc_sock=/run/shuffle/$node/shuffled.sock
for _ in $(seq 100); do
	[ -S "$svc_sock" ] && break
	kill -0 "$svc_pid" 2>/dev/null || fail "the service daemon exited: $(cat "$W/svc.out")"
	sleep 0.1
done
[ -S "$svc_sock" ] || fail "the service daemon has no socket at $svc_sock"
echo "$T: service daemon up as $svc in /run/shuffle (owned by uid $svcuid, key $cfgdir/cluster.key)"

bash_path=$(env -i /bin/bash -c 'echo "$PATH"')
jb=$((($$ % 90000 + 10000) * 10))
slurm_env() {
	local job=$1 ctx=$2
	shift 2
	echo SLURM_SCRIPT_CONTEXT="$ctx" SLURMD_NODENAME="$node" SLURM_JOB_ID="$job" \
		SLURM_JOBID="$job" SLURM_JOB_UID="$uid" SLURM_JOB_GID="$gid" \
		SLURM_JOB_USER="$user" SLURM_NODELIST="$node" SLURM_JOB_PARTITION=debug "$@"
}
# the scripts' defaults: no SHUFFLE_RUN_BASE, no SHUFFLE_CONFIG
settings=(PATH="$src/tests/slurm/bin:$bash_path" CALLS="$W/calls" SHUFFLE_SHUFFLED="$shuffled"
	SHUFFLE_SHUFFLECTL="$shufflectl" SHUFFLE_START_TIMEOUT=20 SHUFFLE_CGROUP=no)
run() {
	local script=$1 job=$2 ctx=$3
	shift 3
	# shellcheck disable=SC2046 # slurm_env prints NAME=value words
	env -i "${settings[@]}" $(slurm_env "$job" "$ctx" "$@") "$script" >"$W/out" 2>"$W/err"
	rc=$?
}
as_user() {
	setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"
}

# ---- 1. an opted-in job beside the service, all defaults
job=$((jb + 1))
: >"$W/calls"
run "$prolog" $job prolog_slurmd SLURM_JOB_COMMENT=shuffle
[ "$rc" = 0 ] || fail "prolog beside the service: exit $rc: $(cat "$W/err")"
grep -q . "$W/calls" && fail "prolog beside the service: $(cat "$W/calls"): $(cat "$W/err")"
rundir=/run/shuffle-slurm/slurm-$job
pid=$(cat "$rundir/shuffled.pid" 2>/dev/null)
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || fail "job $job: no daemon in $rundir"
[ -e "/run/shuffle/slurm-$job" ] && fail "job $job: a directory in the service's /run/shuffle"
as_user "$shufflectl" -s "$rundir/shuffled.sock" config >"$W/config" 2>&1 ||
	fail "shufflectl config of the job's daemon: $(cat "$W/config")"
grep -q "$cfgdef" "$W/config" && fail "the job's daemon read the service's $cfgdef: $(grep "$cfgdef" "$W/config")"
echo "$T: job $job: prolog rc 0, daemon in $rundir, the service's $cfgdef not read"

# ---- 2. the service stops (systemd deletes its RuntimeDirectory): the job's
# daemon is untouched
kill -TERM "$svc_pid"
wait "$svc_pid"
svc_pid=
rm -rf --one-file-system /run/shuffle/*
out=$(as_user env -i PATH=/usr/bin:/bin SHF_RUNTIME_DIR="$rundir" "$shufflectl" ping 2>&1) ||
	fail "the job's daemon is unreachable after the service stopped: $out"
case $out in "pong (pid $pid,"*) ;; *) fail "ping answered '$out'" ;; esac
run "$epilog" $job epilog_slurmd
[ "$rc" = 0 ] || fail "epilog: exit $rc: $(cat "$W/err")"
kill -0 "$pid" 2>/dev/null && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = shuffled ] &&
	! grep -q '^State:.*Z' /proc/"$pid"/status && fail "the epilog left the job's daemon running"
[ -e "$rundir" ] && fail "the epilog left $rundir"
echo "$T: service stopped: the job's daemon still answered; the epilog stopped it"

# ---- 2b. a job that an older Prolog started in /run/shuffle/slurm-JOB
# (before an upgrade, with no service there): the new Epilog stops it
chown root:root /run/shuffle
job=$((jb + 4))
old=/run/shuffle/slurm-$job
install -d -m 0700 -o "$uid" -g "$gid" "$old"
setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$shuffled" --no-config \
	--runtime-dir="$old" --node-name="$node" --rendezvous=none --log-file="$old/shuffled.log" \
	</dev/null >/dev/null 2>&1 &
opid=$!
echo "$opid" >"$old/shuffled.pid"
for _ in $(seq 100); do [ -S "$old/shuffled.sock" ] && break; sleep 0.05; done
[ -S "$old/shuffled.sock" ] || fail "the old-style job daemon did not start"
run "$epilog" $job epilog_slurmd
[ "$rc" = 0 ] || fail "epilog of an old-style job: exit $rc: $(cat "$W/err")"
wait "$opid" 2>/dev/null
[ -e "$old" ] && fail "the epilog left $old"
kill -0 "$opid" 2>/dev/null && fail "the epilog left the old-style job's daemon running"
echo "$T: job $job started by an older Prolog in /run/shuffle: the Epilog stopped it"

# ---- 3. the job daemons' own file, SYSCONFDIR/shuffle/slurm.conf
cat >"$cfgdir/slurm.conf" <<EOF
[shuffled]
peer_timeout_ms = 7777
EOF
job=$((jb + 2))
run "$prolog" $job prolog_slurmd SLURM_JOB_COMMENT=shuffle
[ "$rc" = 0 ] || fail "prolog with slurm.conf: exit $rc: $(cat "$W/err")"
rundir=/run/shuffle-slurm/slurm-$job
as_user "$shufflectl" -s "$rundir/shuffled.sock" config >"$W/config" 2>&1 ||
	fail "shufflectl config: $(cat "$W/config")"
grep -q "7777" "$W/config" || fail "the job's daemon did not read $cfgdir/slurm.conf: $(cat "$W/config")"
run "$epilog" $job epilog_slurmd
[ "$rc" = 0 ] || fail "epilog: exit $rc: $(cat "$W/err")"
echo "$T: job $job: the job daemon read $cfgdir/slurm.conf (peer_timeout_ms 7777)"

# ---- 4. a run base inside the service's runtime directory is refused
job=$((jb + 3))
run "$prolog" $job prolog_slurmd SLURM_JOB_COMMENT=shuffle SHUFFLE_RUN_BASE=/run/shuffle/jobs
[ "$rc" != 0 ] || fail "SHUFFLE_RUN_BASE under /run/shuffle was accepted"
grep -q "inside the system service's runtime directory" "$W/err" || fail "no reason: $(cat "$W/err")"
echo "$T: SHUFFLE_RUN_BASE=/run/shuffle/jobs refused: $(head -n 1 "$W/err")"
echo "$T: OK"
