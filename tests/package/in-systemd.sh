#!/bin/bash
# tests/package/in-systemd.sh - run by systemd as PID 1 of a container
# (tests/package/package.sh boots one with systemd-nspawn --volatile=yes:
# this machine's /usr, so the installed package, under a fresh /etc).  It
# drives the packaged shuffled.service through systemctl and writes what it
# saw to $1 (a directory shared with the host), then powers the container
# off.  Each line: "ok WHAT" or "FAIL WHAT"; the last line "done".
out=$1/result
: >"$out"
ok() { echo "ok $*" >>"$out"; }
bad() { echo "FAIL $*" >>"$out"; }
prop() { systemctl show -p "$2" --value "$1"; }
finish() {
	journalctl -b --no-pager -u shuffled.service >"$1/journal" 2>&1
	echo done >>"$out"
	systemctl --no-block poweroff
	exit 0
}

getent passwd shuffle >/dev/null && ok "systemd-sysusers made the user shuffle" ||
	bad "no user shuffle (sysusers)"
# (not is-enabled: a container booted with an empty /etc applies the
# distribution's presets, which enable everything; the host's package test
# checks that the install enabled nothing)

# start: Type=notify, so `start` returns once READY=1 came
if ! timeout 60 systemctl start shuffled.service; then
	bad "systemctl start shuffled: $(systemctl status --no-pager shuffled 2>&1 | tail -n 5 | tr '\n' ' ')"
	finish "$1"
fi
pid=$(prop shuffled.service MainPID)
[ "$(systemctl is-active shuffled.service)" = active ] && ok "start: active, MainPID $pid" ||
	bad "start: $(systemctl is-active shuffled.service)"
[ "$(prop shuffled.service Type)" = notify ] && ok "Type=notify" || bad "Type $(prop shuffled.service Type)"
st=$(prop shuffled.service StatusText)
case $st in "nodes up 1/1, jobs 0, clients 0") ok "STATUS=$st" ;; *) bad "StatusText '$st'" ;; esac
[ "$(stat -c %U /proc/"$pid")" = shuffle ] && ok "runs as shuffle" || bad "runs as $(stat -c %U /proc/"$pid")"
sock=/run/shuffle/$(hostname)/shuffled.sock
[ -S "$sock" ] && ok "socket $sock ($(stat -c '%U %a' "$sock"))" || bad "no socket $sock: $(ls -R /run/shuffle 2>&1)"
pong=$(shufflectl ping 2>&1) && ok "shufflectl ping: $pong" || bad "shufflectl ping: $pong"

# the sandbox, as the kernel sees it
s=/proc/$pid/status
[ "$(awk '/^NoNewPrivs:/ {print $2}' "$s")" = 1 ] && ok "NoNewPrivs 1" || bad "NoNewPrivs $(grep NoNewPrivs "$s")"
[ "$(awk '/^CapEff:/ {print $2}' "$s")" = 0000000000000000 ] && ok "no capabilities" ||
	bad "$(grep CapEff "$s")"
[ "$(awk '/^Seccomp:/ {print $2}' "$s")" = 2 ] && ok "seccomp filter (SystemCallFilter)" ||
	bad "$(grep Seccomp "$s")"
# ProtectSystem=strict: / is read-only for it, /run/shuffle is not
mi=/proc/$pid/mountinfo
awk '$5 == "/" {print $6}' "$mi" | grep -q '^ro' && ok "ProtectSystem: / read-only" ||
	bad "/ is not read-only: $(awk '$5 == "/"' "$mi")"

# the watchdog: WatchdogSec=30s, fed every 2 s: the last ping is recent
wd=$(prop shuffled.service WatchdogUSec)
[ "$wd" = 30s ] && ok "WatchdogSec $wd" || bad "WatchdogUSec '$wd'"
sleep 3
t1=$(prop shuffled.service WatchdogTimestampMonotonic)
sleep 2.5
t2=$(prop shuffled.service WatchdogTimestampMonotonic)
[ -n "$t1" ] && [ "$t2" -gt "$t1" ] 2>/dev/null && ok "watchdog fed ($t1 -> $t2 us)" ||
	bad "watchdog not fed: WatchdogTimestampMonotonic $t1 -> $t2"

# reload: SIGHUP, same process
timeout 30 systemctl reload shuffled.service && [ "$(prop shuffled.service MainPID)" = "$pid" ] &&
	[ "$(systemctl is-active shuffled.service)" = active ] && ok "reload: same pid $pid, active" ||
	bad "reload: pid $(prop shuffled.service MainPID), $(systemctl is-active shuffled.service)"

# restart: a new process, ready again
timeout 60 systemctl restart shuffled.service
pid2=$(prop shuffled.service MainPID)
[ "$(systemctl is-active shuffled.service)" = active ] && [ "$pid2" != "$pid" ] &&
	ok "restart: pid $pid -> $pid2, active" || bad "restart: pid $pid2, $(systemctl is-active shuffled.service)"
pong=$(shufflectl ping 2>&1) && ok "ping after restart: $pong" || bad "ping after restart: $pong"

# the package's maintainer scripts (from dpkg-deb -e, in $1/ctrl), run as
# dpkg runs them, with systemd for real: an upgrade's postinst restarts
# the running service on the new binary, a remove's prerm stops it
if [ -x "$1/ctrl/postinst" ]; then
	pid3=$(prop shuffled.service MainPID)
	DPKG_MAINTSCRIPT_PACKAGE=shuffled DPKG_MAINTSCRIPT_NAME=postinst \
		"$1/ctrl/postinst" configure 0.2.0 >"$1/postinst.log" 2>&1
	pid4=$(prop shuffled.service MainPID)
	[ "$(systemctl is-active shuffled.service)" = active ] && [ "$pid4" != "$pid3" ] &&
		ok "postinst configure (upgrade): restarted, pid $pid3 -> $pid4" ||
		bad "postinst configure (upgrade): pid $pid3 -> $pid4, $(systemctl is-active shuffled.service): $(cat "$1/postinst.log")"
	if [ -x "$1/ctrl/prerm" ]; then
		DPKG_MAINTSCRIPT_PACKAGE=shuffled DPKG_MAINTSCRIPT_NAME=prerm \
			"$1/ctrl/prerm" remove >"$1/prerm.log" 2>&1
		[ "$(systemctl is-active shuffled.service)" = inactive ] && ok "prerm remove: stopped" ||
			bad "prerm remove: $(systemctl is-active shuffled.service): $(cat "$1/prerm.log")"
	else
		bad "no prerm: a remove leaves the service running"
	fi
	timeout 60 systemctl start shuffled.service || bad "start after prerm"
fi

# stop: STOPPING=1, the runtime directory goes
timeout 60 systemctl stop shuffled.service
[ "$(systemctl is-active shuffled.service)" = inactive ] && ok "stop: inactive" ||
	bad "stop: $(systemctl is-active shuffled.service)"
[ -e /run/shuffle ] && bad "/run/shuffle left after stop: $(ls -R /run/shuffle)" ||
	ok "stop: /run/shuffle removed (RuntimeDirectory)"
[ "$(prop shuffled.service Result)" = success ] && ok "Result success" ||
	bad "Result $(prop shuffled.service Result)"
finish "$1"
