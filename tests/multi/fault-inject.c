/* SPDX-License-Identifier: MIT */
/*
 * tests/multi/fault-inject.c - the fault-injection hooks of
 * daemon/net/fabric_io.c (sends) and daemon/net/fabric.c (releases), linked
 * only into shuffled-fault (the daemon built with
 * -DSHD_FAULT_INJECTION; see tests/multi/meson.build).  The installed
 * shuffled has neither this file nor the call.
 *
 * send_common() (shd_fabric_send and shd_fabric_send_small) asks
 * shd_fault_send() before each send to a node still in the address
 * vector; a non-zero answer is returned to the caller at once, as a hard
 * fi_send() error would be.  Which sends fail is set by one variable:
 *
 *   SHD_FAULT_SEND="node=N[,kind=K][,file=PATH][,nth=I][,err=E]"
 *
 *   node  destination node id (required)
 *   kind  only wire messages of this kind, by shf_wire_kind_name(): batch,
 *         ack, heartbeat, job-join, job-leave, epoch, drop (default any)
 *   file  armed only while PATH exists (the test creates it when the
 *         state it wants is reached)
 *   nth   the I-th matching armed send fails, and every one after it
 *         (default 1): a peer that failed once stays failed
 *   err   the errno, by name (ECONNRESET) or number; returned negated
 *         (default ECONNRESET)
 *
 * Every daemon of a run gets the same environment: node= names the
 * destination, so a daemon never matches sends to itself.  The node is not
 * removed from the fabric here; net.c's peer_down() does that, as after a
 * real error.  Each injected failure is written to stderr ("fault
 * injection: ..."), which the tests look for: a test must not pass because
 * its fault never fired.  A malformed value aborts the daemon.
 *
 * shd_fabric_release() (peer_idle_ms: both ends idle) asks
 * shd_fault_release() before it closes a connection; it can hold that
 * release, the daemon's loop blocked, so that what the peer sends
 * meanwhile is on the connection, unread, when it closes (the wake race,
 * docs/protocol-wire.md "Idle peers"):
 *
 *   SHD_FAULT_RELEASE="node=N,mark=PATH,go=PATH[,wait_ms=MS][,refuse=M]"
 *
 * The first release of node N's connection creates mark, then waits until
 * go exists (polled every 5 ms, at most wait_ms, default 20000), then goes
 * on.  Once only.  refuse: every release of node M's connection is
 * refused (-EBUSY: tried again at the next tick), so that the daemon on
 * node N keeps its end open (its release would come later anyway).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/wire.h"

int shd_fault_send(uint32_t node, const void *buf, size_t len);

static struct {
	bool parsed, on;
	uint32_t node, kind, nth, seen;
	int err;
	char file[512];
} fault;

static void bad(const char *what)
{
	fprintf(stderr, "fault injection: bad SHD_FAULT_SEND (%s): %s\n", what,
		getenv("SHD_FAULT_SEND"));
	abort();
}

static unsigned long number(const char *v, const char *what)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || end == v || *end)
		bad(what);
	return x;
}

static void parse(void)
{
	const char *env = getenv("SHD_FAULT_SEND");
	char buf[600], *save = NULL;
	fault.parsed = true;
	if (!env || !*env)
		return;
	if (strlen(env) >= sizeof(buf))
		bad("too long");
	strcpy(buf, env);
	fault.node = UINT32_MAX;
	fault.nth = 1;
	fault.err = ECONNRESET;
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *v = strchr(kv, '=');
		if (!v)
			bad(kv);
		*v++ = '\0';
		if (!strcmp(kv, "node")) {
			fault.node = (uint32_t)number(v, "node");
		} else if (!strcmp(kv, "kind")) {
			for (fault.kind = 1; fault.kind < SHF_WIRE_KIND_MAX; fault.kind++)
				if (!strcmp(v, shf_wire_kind_name(fault.kind)))
					break;
			if (fault.kind == SHF_WIRE_KIND_MAX)
				bad("kind");
		} else if (!strcmp(kv, "file")) {
			snprintf(fault.file, sizeof(fault.file), "%s", v);
		} else if (!strcmp(kv, "nth")) {
			fault.nth = (uint32_t)number(v, "nth");
		} else if (!strcmp(kv, "err")) {
			fault.err = 0;
			for (int e = 1; e < 256 && !fault.err; e++)
				if (strerrorname_np(e) && !strcmp(v, strerrorname_np(e)))
					fault.err = e;
			if (!fault.err)
				fault.err = (int)number(v, "err");
			if (fault.err <= 0 || fault.err > 4095)
				bad("err");
		} else {
			bad(kv);
		}
	}
	if (fault.node == UINT32_MAX)
		bad("no node=");
	fault.on = true;
	fprintf(stderr, "fault injection: armed by SHD_FAULT_SEND=%s\n", env);
}

int shd_fault_send(uint32_t node, const void *buf, size_t len)
{
	if (!fault.parsed)
		parse();
	if (!fault.on || node != fault.node)
		return 0;
	/* the common header's kind, at its fixed offset (proto/wire.h) */
	size_t at = offsetof(struct shf_wire_raw_hdr, kind);
	unsigned kind = len >= at + 2 ? shf_wire_get16((const uint8_t *)buf + at) : 0;
	if (fault.kind && kind != fault.kind)
		return 0;
	if (fault.file[0] && access(fault.file, F_OK) != 0)
		return 0;
	if (++fault.seen < fault.nth)
		return 0;
	fprintf(stderr, "fault injection: send %u of a %s (%zu bytes) to node %u fails with -%s\n",
		fault.seen, shf_wire_kind_name(kind), len, node, strerrorname_np(fault.err));
	return -fault.err;
}

static struct {
	bool parsed, on, fired;
	uint32_t node, refuse;
	unsigned long wait_ms;
	char mark[512], go[512];
} rel;

static void rel_parse(void)
{
	const char *env = getenv("SHD_FAULT_RELEASE");
	char buf[1200], *save = NULL;
	rel.parsed = true;
	if (!env || !*env)
		return;
	if (strlen(env) >= sizeof(buf))
		bad("SHD_FAULT_RELEASE too long");
	strcpy(buf, env);
	rel.node = rel.refuse = UINT32_MAX;
	rel.wait_ms = 20000;
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *v = strchr(kv, '=');
		if (!v)
			bad(kv);
		*v++ = '\0';
		if (!strcmp(kv, "node"))
			rel.node = (uint32_t)number(v, "node");
		else if (!strcmp(kv, "mark"))
			snprintf(rel.mark, sizeof(rel.mark), "%s", v);
		else if (!strcmp(kv, "go"))
			snprintf(rel.go, sizeof(rel.go), "%s", v);
		else if (!strcmp(kv, "refuse"))
			rel.refuse = (uint32_t)number(v, "refuse");
		else if (!strcmp(kv, "wait_ms"))
			rel.wait_ms = number(v, "wait_ms");
		else
			bad(kv);
	}
	if (rel.node == UINT32_MAX || !rel.mark[0] || !rel.go[0])
		bad("SHD_FAULT_RELEASE needs node=, mark= and go=");
	rel.on = true;
	fprintf(stderr, "fault injection: armed by SHD_FAULT_RELEASE=%s\n", env);
}

int shd_fault_release(uint32_t node);

int shd_fault_release(uint32_t node)
{
	if (!rel.parsed)
		rel_parse();
	if (rel.on && node == rel.refuse)
		return -EBUSY;
	if (!rel.on || rel.fired || node != rel.node)
		return 0;
	rel.fired = true;
	FILE *f = fopen(rel.mark, "w");
	if (f)
		fclose(f);
	fprintf(stderr, "fault injection: the release of node %u's connection waits for %s\n",
		node, rel.go);
	unsigned long waited = 0;
	while (access(rel.go, F_OK) != 0 && waited < rel.wait_ms) {
		usleep(5000);
		waited += 5;
	}
	fprintf(stderr, "fault injection: releasing node %u's connection after %lu ms\n", node,
		waited);
	return 0;
}
