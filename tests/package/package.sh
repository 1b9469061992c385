#!/usr/bin/env bash
# tests/package/package.sh - suite 'package': build the Debian packages
# with scripts/package, install them on this machine, start the packaged
# daemon the way its systemd unit does (as the system user, in the unit's
# runtime directory), run a job compiled against the packaged -dev as an
# unprivileged user with no SHF_* variables, checks the maintainer scripts
# (dpkg-deb -e) and runs upgrade, remove and purge, recording the systemd
# calls they make through stand-ins for deb-systemd-invoke and systemctl.
#
# Root only (dpkg, other uids, a mount namespace): skips with 77 otherwise.
# It refuses (77) to run where the packages are already installed, since
# it would replace and purge them.  /run/shuffle is a tmpfs of its own in a
# private mount namespace, so a system daemon of this machine is never
# touched.
set -uo pipefail
T=package
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "$T: FAIL: $*" >&2; exit 1; }
skip() { echo "$T: SKIP: $*" >&2; exit 77; }
note() { echo "$T: $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i, a mount namespace, other uids)"
if [ -z "${SHF_PKG_IN_NS:-}" ]; then
	unshare --mount --propagation private true 2>/dev/null ||
		skip "cannot create a mount namespace here (unshare --mount)"
	exec env SHF_PKG_IN_NS=1 unshare --mount --propagation private "$0" "$@"
fi
for p in shuffled libshuffle-client1 libshuffle-client-dev shuffled-dbgsym libshuffle-client1-dbgsym python3-shuffle; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		skip "package $p is already installed here; this test would replace and purge it"
	fi
done
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
	fail "dpkg-buildpackage or debhelper is missing (scripts/install-deps installs them)"

work=$(mktemp -d /tmp/shuffle-pkgtest.XXXXXX) || fail "mktemp"
chmod 755 "$work"
daemon_pid=
made_run=
made_slurm_run=
cleanup() {
	[ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	dpkg --purge python3-shuffle python3-shuffle-dbgsym >/dev/null 2>&1
	dpkg --purge libshuffle-client1-dbgsym shuffled-dbgsym libshuffle-client-dev \
		libshuffle-client1 shuffled >/dev/null 2>&1
	umount /run/shuffle 2>/dev/null
	umount /run/systemd /run/shuffle-slurm 2>/dev/null
	[ -n "$made_slurm_run" ] && rmdir /run/shuffle-slurm 2>/dev/null
	[ -n "$made_run" ] && rmdir /run/shuffle 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. build
note "building the packages (scripts/package)"
"$SRC/scripts/package" --out "$work/pkgs" > "$work/package.log" 2>&1 || {
	tail -n 40 "$work/package.log" >&2
	fail "scripts/package failed"
}
grep -E '^[EWIP]: ' "$work/pkgs/lintian.txt" | sed "s/^/$T: lintian: /"
for p in shuffled libshuffle-client1 libshuffle-client-dev; do
	ls "$work/pkgs/${p}_"*.deb >/dev/null 2>&1 || fail "no $p package was built"
done

# ---- 1b. the maintainer scripts and files of the built shuffled package
deb=$(ls "$work/pkgs/shuffled_"*.deb)
dpkg-deb -e "$deb" "$work/ctrl" || fail "dpkg-deb -e $deb"
note "control files: $(cd "$work/ctrl" && echo *)"
[ -f "$work/ctrl/prerm" ] || fail "no prerm: the service is not stopped on remove"
sed -e :a -e '/\\$/N; s/\\\n//; ta' "$work/ctrl/prerm" | grep -A2 '"$1" = remove' |
	grep -q 'deb-systemd-invoke stop .*shuffled.service' ||
	fail "prerm does not stop shuffled.service on remove: $(cat "$work/ctrl/prerm")"
grep -q 'deb-systemd-invoke stop' "$work/ctrl/preinst" 2>/dev/null &&
	fail "preinst stops the service on upgrade (and nothing starts it again): $(grep -B3 'deb-systemd-invoke stop' "$work/ctrl/preinst")"
grep -q "deb-systemd-invoke try-restart .*'shuffled.service'" "$work/ctrl/postinst" ||
	fail "postinst does not try-restart shuffled.service on upgrade"
grep -qE 'deb-systemd-invoke (start|restart) ' "$work/ctrl/postinst" &&
	fail "postinst starts a unit on install: $(grep -E 'deb-systemd-invoke (start|restart)' "$work/ctrl/postinst")"
grep -q 'rm -f /etc/shuffle/cluster.key' "$work/ctrl/postrm" ||
	fail "postrm does not remove the cluster key on purge"
for f in /etc/shuffle/shuffled.conf /etc/logrotate.d/shuffled; do
	grep -qx "$f" "$work/ctrl/conffiles" || fail "$f is not a conffile: $(cat "$work/ctrl/conffiles")"
done
contents=$(dpkg-deb -c "$deb")
for f in ./lib/systemd/system/shuffled.service ./lib/systemd/system/shuffle-prometheus.service \
	./lib/systemd/system/shuffle-prometheus.timer ./etc/logrotate.d/shuffled; do
	grep -q " $f\$" <<<"$contents" || fail "the package lacks $f"
done
note "maintainer scripts: prerm stops on remove, postinst try-restarts on upgrade, no start or enable on install, purge removes the cluster key"

# The maintainer scripts act only where systemd runs
# ([ -d /run/systemd/system ]) and through deb-systemd-invoke and
# systemctl.  systemd is not PID 1 here, so /run/systemd is a tmpfs of this
# mount namespace with system/ in it, and two stand-ins on PATH record the
# calls (nothing else is faked: dpkg runs the real scripts).
mount -t tmpfs tmpfs /run/systemd || fail "cannot mount a tmpfs on /run/systemd"
mkdir /run/systemd/system
mkdir "$work/stub"
for c in deb-systemd-invoke systemctl; do
	printf '#!/bin/sh\necho "%s $*" >> %s/calls\nexit 0\n' "$c" "$work" >"$work/stub/$c"
	chmod +x "$work/stub/$c"
done
export PATH="$work/stub:$PATH"
: >"$work/calls"

# ---- 2. install
debs=()
for p in shuffled libshuffle-client1 libshuffle-client-dev; do
	debs+=("$work/pkgs/${p}_"*.deb)
done
dpkg -i "${debs[@]}" > "$work/dpkg.log" 2>&1 || {
	cat "$work/dpkg.log" >&2
	fail "dpkg -i of the packages failed"
}
grep -qE 'deb-systemd-invoke (start|restart|try-restart)' "$work/calls" &&
	fail "the first install started a unit: $(cat "$work/calls")"
for w in multi-user.target.wants/shuffled.service timers.target.wants/shuffle-prometheus.timer; do
	[ -e "/etc/systemd/system/$w" ] && fail "the install enabled a unit: /etc/systemd/system/$w"
done
note "installed: $(dpkg-query -W -f='${Package} ${Version}, ' shuffled libshuffle-client1 libshuffle-client-dev)"
getent passwd shuffle >/dev/null || fail "the package did not create the system user 'shuffle'"
unit=/lib/systemd/system/shuffled.service
[ -f "$unit" ] || fail "no unit at $unit"
for f in /usr/sbin/shuffled /usr/bin/shufflectl /usr/include/shuffle.h; do
	[ -e "$f" ] || fail "$f is not installed"
done
ldd /usr/sbin/shuffled /usr/bin/shufflectl | grep -q 'not found' &&
	fail "an installed program misses a library: $(ldd /usr/sbin/shuffled /usr/bin/shufflectl | grep 'not found')"
man -w 8 shuffled >/dev/null 2>&1 || fail "man page shuffled(8) is not installed"
man -w 3 shf_open >/dev/null 2>&1 || fail "man page shf_open(3) is not installed"
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify "$unit" > "$work/verify.log" 2>&1 ||
		{ cat "$work/verify.log" >&2; fail "systemd-analyze verify $unit failed"; }
	note "systemd-analyze verify: clean"
fi

# ---- 2b. the packaged unit under a real systemd: systemd as PID 1 of a
# container (systemd-nspawn --volatile=yes: this machine's /usr, so the
# package just installed, under an empty /etc and /var), driven through
# systemctl by tests/package/in-systemd.sh: start (Type=notify, STATUS=),
# the sandbox as the kernel sees it, the watchdog, reload, restart, the
# package's postinst (upgrade: restart) and prerm (remove: stop) run for
# real, stop.  In the container: the wait-online unit masked (no network
# manager there), the host's /etc/alternatives (libfabric's psm library is
# an alternative), and policy-rc.d allowing service actions.
if command -v systemd-nspawn >/dev/null; then
	ct=$work/ct
	mkdir -p "$ct/out"
	chmod 777 "$ct/out"
	cp "$SRC/tests/package/in-systemd.sh" "$ct/"
	chmod 755 "$ct/in-systemd.sh"
	cp -a "$work/ctrl" "$ct/out/ctrl"
	printf '[Unit]\nDescription=shuffle package test\n[Service]\nType=exec\nExecStart=/shf/in-systemd.sh /shf/out\n' \
		>"$ct/shf-test.service"
	printf '#!/bin/sh\nexit 0\n' >"$ct/policy-rc.d"
	chmod 755 "$ct/policy-rc.d"
	ctargs=(-D / --volatile=yes --register=no --keep-unit --private-network -M "shfpkg$$"
		--bind="$ct:/shf" --bind-ro="$ct/shf-test.service:/etc/systemd/system/shf-test.service"
		--bind-ro=/dev/null:/etc/systemd/system/systemd-networkd-wait-online.service
		--bind-ro=/etc/alternatives)
	[ -e /usr/sbin/policy-rc.d ] && ctargs+=(--bind-ro="$ct/policy-rc.d:/usr/sbin/policy-rc.d")
	timeout 120 systemd-nspawn "${ctargs[@]}" -b systemd.unit=shf-test.service \
		systemd.firstboot=off >"$ct/console.log" 2>&1
	ctrc=$?
	if ! grep -qx done "$ct/out/result" 2>/dev/null; then
		tail -n 30 "$ct/console.log" >&2
		fail "the container's test did not finish (systemd-nspawn exit $ctrc)"
	fi
	sed "s/^/$T: systemd: /" "$ct/out/result" | grep -v ': done$'
	grep -q '^FAIL' "$ct/out/result" && {
		cat "$ct/out/journal" >&2
		fail "the packaged unit under systemd: $(grep '^FAIL' "$ct/out/result" | head -n 3)"
	}
	note "the packaged unit under a real systemd (PID 1 of a container): all checks passed"
else
	note "NOTE: systemd-nspawn is not installed (package systemd-container): the unit was not run under a real systemd"
fi

# ---- 3. the packaged daemon, started as its unit starts it
user=$(sed -n 's/^User=//p' "$unit" | tail -n 1)
[ -n "$user" ] || fail "the unit has no User= (the system daemon must not run as root)"
getent passwd "$user" >/dev/null || fail "the unit's user $user does not exist"
rtdir=$(sed -n 's/^RuntimeDirectory=//p' "$unit" | tail -n 1)
[ "$rtdir" = shuffle ] || fail "the unit's RuntimeDirectory is '$rtdir', not shuffle"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit" | tail -n 1)
exe=${exec_start%% *}
[ "$exe" = /usr/sbin/shuffled ] || fail "the unit starts '$exe', not /usr/sbin/shuffled"
# the service's configuration as operations.md describes it: a cluster key
# only the service's user may read
shuffle-keygen /etc/shuffle/cluster.key > "$work/keygen.log" 2>&1 ||
	{ cat "$work/keygen.log" >&2; fail "shuffle-keygen failed"; }
chown "$user:$user" /etc/shuffle/cluster.key
sed -i 's|^# cluster_key =.*|cluster_key = /etc/shuffle/cluster.key|' /etc/shuffle/shuffled.conf
grep -qx 'cluster_key = /etc/shuffle/cluster.key' /etc/shuffle/shuffled.conf ||
	fail "cannot set cluster_key in /etc/shuffle/shuffled.conf"
[ -d /run/shuffle ] || { mkdir /run/shuffle && made_run=1; }
mount -t tmpfs -o mode=0755 tmpfs /run/shuffle || fail "cannot mount a tmpfs on /run/shuffle"
chown "$user:$user" /run/shuffle    # what RuntimeDirectory= does
node=$(hostname)
mkdir "$work/log" && chown "$user:$user" "$work/log"   # what LogsDirectory= does
# the unit's environment: RUNTIME_DIRECTORY, no NOTIFY_SOCKET, and
# /etc/default/shuffled left out (the test must not read the machine's)
setpriv --reuid="$user" --regid="$user" --init-groups \
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin RUNTIME_DIRECTORY=/run/shuffle \
	/usr/sbin/shuffled --log-file="$work/log/shuffled.log" > "$work/shuffled.out" 2>&1 &
daemon_pid=$!
sock=/run/shuffle/$node/shuffled.sock
for _ in $(seq 1 200); do
	[ -S "$sock" ] && break
	kill -0 "$daemon_pid" 2>/dev/null || { cat "$work"/shuffled.out "$work"/log/shuffled.log >&2; fail "the packaged daemon exited"; }
	sleep 0.1
done
[ -S "$sock" ] || { cat "$work"/shuffled.out "$work"/log/shuffled.log >&2; fail "no socket at $sock after 20 s"; }
owner=$(stat -c %U "$sock")
[ "$owner" = "$user" ] || fail "the socket belongs to $owner, not $user"
note "packaged daemon up as $user: $sock ($(stat -c %a "$sock"))"

# ---- 4. a job compiled against the packaged -dev, run by another user
cflags=$(pkg-config --cflags --libs shuffle-client) || fail "pkg-config does not know shuffle-client"
cc -O2 -o "$work/app" "$SRC/examples/shuffle-example.c" $cflags -pthread ||
	fail "cannot compile the example against the packaged header and library"
# (Debian 12 merges /lib into /usr/lib: compare resolved paths)
used=$(ldd "$work/app" | awk '/libshuffle-client.so.1/ {print $3}')
[ -n "$used" ] && [ "$(readlink -f "$used")" = "$(readlink -f "$(dpkg -L libshuffle-client1 | grep 'libshuffle-client.so.1$')")" ] ||
	fail "the app does not use the packaged library: $(ldd "$work/app" | grep shuffle)"
pids=()
for r in 0 1 2 3; do
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -i PATH=/usr/bin:/bin SHF_RANK=$r SHF_WORLD=4 SHF_JOB=pkgtest \
		"$work/app" -n 20000 -t 30000 > "$work/app.$r" 2>&1 &
	pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || { rc=1; cat "$work/app.$i" >&2; }
done
[ "$rc" = 0 ] || fail "the packaged job failed"
delivered=$(cat "$work"/app.? | awk '/delivered/ {d += $NF} END {print d+0}')
[ "$delivered" = 80000 ] || fail "delivered $delivered messages in all, not 80000: $(cat "$work"/app.?)"
note "job of uid 65534 against the packaged -dev: 4 ranks, 80000 messages delivered"
setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin \
	shufflectl status > "$work/status" 2>&1 || { cat "$work/status" >&2; fail "shufflectl status as uid 65534 failed"; }
note "shufflectl status (uid 65534, no environment): $(head -n 1 "$work/status")"

# ---- 4b. the packaged Slurm Prolog/Epilog beside the running service,
# with their defaults (issue 23): a job of uid 65534 that opted in gets its
# own daemon, which reads neither the service's shuffled.conf nor its key,
# in /run/shuffle-slurm (a tmpfs of this mount namespace).  scontrol and
# scancel are the Slurm test's stand-ins (they record calls).
[ -d /run/shuffle-slurm ] || { mkdir /run/shuffle-slurm && made_slurm_run=1; }
mount -t tmpfs -o mode=0755 tmpfs /run/shuffle-slurm || fail "cannot mount a tmpfs on /run/shuffle-slurm"
job=$(( $$ % 100000 + 100000 ))
slurm_env=(PATH="$SRC/tests/slurm/bin:/usr/sbin:/usr/bin:/sbin:/bin" CALLS="$work/slurm-calls"
	SHUFFLE_CGROUP=no SLURM_JOB_ID=$job SLURM_JOB_UID=65534 SLURM_JOB_GID=65534
	SLURMD_NODENAME="$node" SLURM_NODELIST="$node" SLURM_JOB_COMMENT=shuffle)
: >"$work/slurm-calls"
env -i "${slurm_env[@]}" SLURM_SCRIPT_CONTEXT=prolog_slurmd /usr/libexec/shuffle/slurm-prolog \
	> "$work/prolog.log" 2>&1
prc=$?
[ "$prc" = 0 ] && ! grep -q . "$work/slurm-calls" ||
	fail "the packaged prolog beside the service: rc $prc, calls '$(cat "$work/slurm-calls")': $(cat "$work/prolog.log")"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin \
	SHF_RUNTIME_DIR=/run/shuffle-slurm/slurm-$job shufflectl ping 2>&1) ||
	fail "the job's daemon does not answer: $out"
env -i "${slurm_env[@]}" SLURM_SCRIPT_CONTEXT=epilog_slurmd /usr/libexec/shuffle/slurm-epilog \
	> "$work/epilog.log" 2>&1 || fail "the packaged epilog failed: $(cat "$work/epilog.log")"
[ -e /run/shuffle-slurm/slurm-$job ] && fail "the epilog left /run/shuffle-slurm/slurm-$job"
setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin \
	shufflectl status > /dev/null 2>&1 || fail "the service does not answer after the job's epilog"
note "packaged prolog beside the service (cluster_key set): job $job's daemon answered ($out); epilog stopped it; the service still answers"

# ---- 4c. python3-shuffle: Debian's /usr/bin/python3 runs the word-count
# example from the package's docs against the packaged daemon, as uid 65534
if ls "$work/pkgs/python3-shuffle_"*.deb >/dev/null 2>&1; then
	dpkg -i "$work/pkgs/python3-shuffle_"*.deb > "$work/dpkg-py.log" 2>&1 ||
		{ cat "$work/dpkg-py.log" >&2; fail "dpkg -i python3-shuffle failed (Depends?)"; }
	ex=/usr/share/doc/python3-shuffle/examples/wordcount.py
	[ -f "$ex" ] || fail "python3-shuffle has no $ex"
	pids=()
	for r in 0 1 2 3; do
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			env -i PATH=/usr/bin:/bin SHF_RANK=$r SHF_WORLD=4 SHF_JOB=pkgpy \
			/usr/bin/python3 "$ex" > "$work/py.$r" 2>&1 &
		pids+=($!)
	done
	rc=0
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || { rc=1; cat "$work/py.$i" >&2; }
	done
	[ "$rc" = 0 ] || fail "the packaged Python word count failed"
	grep -q "matches the serial count" "$work/py.0" || fail "word count: $(cat "$work/py.0")"
	note "python3-shuffle: $(tail -n 1 "$work/py.0")"
	dpkg --purge python3-shuffle > "$work/purge-py.log" 2>&1 ||
		{ cat "$work/purge-py.log" >&2; fail "dpkg --purge python3-shuffle failed"; }
else
	fail "no python3-shuffle package was built"
fi

kill -TERM "$daemon_pid"
wait "$daemon_pid"
drc=$?
daemon_pid=
[ "$drc" = 0 ] || fail "the packaged daemon exited with $drc on SIGTERM"
[ -e "$sock" ] && fail "the socket is still there after a clean stop"

# ---- 5. the logrotate file (when logrotate is here)
if command -v logrotate >/dev/null; then
	logrotate -d /etc/logrotate.d/shuffled > "$work/logrotate.log" 2>&1 ||
		{ cat "$work/logrotate.log" >&2; fail "logrotate -d /etc/logrotate.d/shuffled failed"; }
	grep -qi 'error' "$work/logrotate.log" && { cat "$work/logrotate.log" >&2; fail "logrotate reports an error"; }
	note "logrotate -d /etc/logrotate.d/shuffled: clean"
fi

# ---- 6. upgrade (the same package again: dpkg runs the upgrade path),
# remove, purge; the calls the scripts made, through the stand-ins
: >"$work/calls"
dpkg -i "$deb" > "$work/upgrade.log" 2>&1 || { cat "$work/upgrade.log" >&2; fail "dpkg -i (upgrade) failed"; }
grep -q 'deb-systemd-invoke stop' "$work/calls" && fail "the upgrade stopped a unit: $(cat "$work/calls")"
grep -q "deb-systemd-invoke try-restart .*shuffled.service" "$work/calls" ||
	fail "the upgrade did not try-restart shuffled.service: $(cat "$work/calls")"
note "upgrade: $(grep try-restart "$work/calls")"
: >"$work/calls"
dpkg --remove libshuffle-client-dev libshuffle-client1 shuffled > "$work/remove.log" 2>&1 ||
	{ cat "$work/remove.log" >&2; fail "dpkg --remove failed"; }
grep -q "deb-systemd-invoke stop .*shuffled.service" "$work/calls" ||
	fail "remove did not stop shuffled.service: $(cat "$work/calls")"
note "remove: $(grep 'deb-systemd-invoke stop' "$work/calls")"
[ -f /etc/shuffle/shuffled.conf ] || fail "remove (not purge) deleted the conffile"
head -c 32 /dev/urandom > /etc/shuffle/cluster.key  # as shuffle-keygen makes it
chmod 600 /etc/shuffle/cluster.key
dpkg --purge shuffled > "$work/purge.log" 2>&1 ||
	{ cat "$work/purge.log" >&2; fail "dpkg --purge failed"; }
for f in /usr/sbin/shuffled /usr/bin/shufflectl /usr/include/shuffle.h "$unit" \
	/etc/shuffle/cluster.key /etc/shuffle/shuffled.conf /etc/logrotate.d/shuffled; do
	[ -e "$f" ] && fail "$f is still there after purge"
done
[ -d /etc/shuffle ] && fail "/etc/shuffle is still there after purge: $(ls -la /etc/shuffle)"
note "purged: the cluster key and /etc/shuffle are gone"
exit 0
