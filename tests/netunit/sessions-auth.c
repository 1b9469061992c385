/* SPDX-License-Identifier: MIT */
/*
 * tests/netunit/sessions-auth.c - the session rules with a cluster key
 * (net.c: session_admit, hb_proves; net/tx.c: shd_net_heartbeat;
 * docs/protocol-wire.md, "Authentication").  The daemon is node 0 with a
 * key; node 1 plays a peer, with the right key or another.
 *
 *   A. a probe without a MAC: refused (auth_failed + 1), not answered, the
 *      peer stays UNKNOWN;
 *   B. a probe with a MAC: answered (JOINING) with a heartbeat whose flags,
 *      nonce and MAC verify under the key for (0, 1, its tag, our tag,
 *      its nonce, our nonce);
 *   C. in JOINING: a JOB_JOIN with both tags is not taken yet: it came
 *      early (its sender is up; the heartbeat that proves the key was lost
 *      or comes later): kept (early_held + 1, not wire_stale), still
 *      JOINING, and a heartbeat with HB_WAKE asks the peer for its proof;
 *      one with another tag of the peer's is stale; the closing heartbeat
 *      with a MAC of another key, or of the right key over another nonce
 *      (a replay), or without ECHO: refused (auth_failed + 1 each), still
 *      JOINING, no peer_up, the JOIN still kept; with the right MAC: UP,
 *      and the kept JOIN is taken right after it, once;
 *   D. UP: a heartbeat with a new tag and no ECHO (a restart that has not
 *      seen our nonce yet) is dropped (wire_stale), the session stays; one
 *      with a MAC of another key: auth_failed, the session stays; one with
 *      the right MAC over our nonce ends the session (FAILED, a restart);
 *   E. a daemon without a key refuses a probe that carries a MAC;
 *   F. early messages are bounded: with peer_credits 1 and batch_bytes
 *      1 KiB, JOINs of the coming session are kept up to 65 KiB; the next
 *      is dropped (early_dropped + 1), and once the proof comes the session
 *      is restarted at once (FAILED) instead of taking a sequence with a
 *      hole; kept messages go with their tag: a probe with a new tag
 *      discards them (nothing taken when that session comes up).
 */
#include <fcntl.h>
#include <unistd.h>

#include "daemon/net/auth.h"
#include "tests/netunit/harness.h"

static char dir[] = "/tmp/shf-sauth-XXXXXX";
static char kpath[256], opath[256];

static void write_key(const char *path, uint8_t fill)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	uint8_t b[SHD_AUTH_KEY_BYTES];
	memset(b, fill, sizeof(b));
	CHECK(write(fd, b, sizeof(b)) == (ssize_t)sizeof(b));
	close(fd);
}

static struct shd_auth *key(const char *path)
{
	struct shd_auth *a = NULL;
	char err[512];
	CHECKF(shd_auth_load(path, &a, err, sizeof(err)) == 0, "%s", err);
	return a;
}

/* Node 1's heartbeat (s, t) with nonce; mac under a (NULL: no MAC), echo
 * (NULL with a: no ECHO), counter ctr (HB_CTR; 0: the next one, as a
 * daemon counts). */
static uint32_t hb_ctr;
static void send_hb_ctr(uint64_t s, uint64_t t, const uint8_t *nonce, const struct shd_auth *a,
			const uint8_t *echo, uint32_t ctr)
{
	uint8_t buf[SHF_WIRE_HEARTBEAT_BYTES];
	struct shf_wire_heartbeat hb = {.time_ns = 1, .incarnation = 0x77};
	memcpy(hb.nonce, nonce, SHF_WIRE_NONCE_BYTES);
	if (a) {
		hb.counter = ctr ? ctr : ++hb_ctr;
		struct shd_auth_hb m = {1, 0, s, t, nonce, echo, true, hb.counter};
		hb.flags = SHF_WIRE_HB_MAC | SHF_WIRE_HB_CTR | (echo ? SHF_WIRE_HB_ECHO : 0);
		shd_auth_mac(a, &m, hb.mac);
	}
	CHECK(shf_wire_enc_heartbeat(buf, sizeof(buf), 1, 0, &hb) == SHF_WIRE_HEARTBEAT_BYTES);
	h_stamp(buf, s, t);
	CHECK(fake_inject_raw_now(1, buf, sizeof(buf)) == 0);
}

static void send_hb(uint64_t s, uint64_t t, const uint8_t *nonce, const struct shd_auth *a,
		    const uint8_t *echo)
{
	send_hb_ctr(s, t, nonce, a, echo, 0);
}

int main(void)
{
	CHECK(shd_auth_init() == 0);
	CHECK(mkdtemp(dir));
	snprintf(kpath, sizeof(kpath), "%s/key", dir);
	snprintf(opath, sizeof(opath), "%s/other", dir);
	write_key(kpath, 0x42);
	write_key(opath, 0x43);
	struct shd_auth *k = key(kpath), *other = key(opath);

	struct h_opts o = h_defaults();
	o.manual_up = true;
	o.cluster_key = kpath;
	h_open(&o);
	struct shd_peer *p = h_peer(1);
	const uint64_t tag = h_new_tag(1);
	uint8_t nonce[SHF_WIRE_NONCE_BYTES], nonce2[SHF_WIRE_NONCE_BYTES];
	shd_auth_nonce(nonce);
	shd_auth_nonce(nonce2);

	h_step("A: a probe without a MAC");
	size_t hbs = fake_count(1, SHF_WIRE_HEARTBEAT);
	send_hb(tag, 0, nonce, NULL, NULL);
	CHECK(D->st.auth_failed == 1 && p->state == PEER_UNKNOWN);
	CHECK(fake_count(1, SHF_WIRE_HEARTBEAT) == hbs);

	h_step("B: a probe with a MAC is answered with ours");
	send_hb(tag, 0, nonce, k, NULL);
	CHECK(D->st.auth_failed == 1 && p->state == PEER_JOINING && p->cold->peer_session == tag);
	CHECK(fake_count(1, SHF_WIRE_HEARTBEAT) == hbs + 1);
	struct shf_wire_hdr h;
	h_decode((size_t)h_last_send(1, SHF_WIRE_HEARTBEAT), &h);
	const uint64_t dtag = h.src_session;
	CHECK(h.dst_session == tag && dtag == p->cold->my_session);
	CHECK(h.u.heartbeat.flags == (SHF_WIRE_HB_MAC | SHF_WIRE_HB_ECHO | SHF_WIRE_HB_CTR));
	CHECK(h.u.heartbeat.counter >= 1);
	uint8_t dnonce[SHF_WIRE_NONCE_BYTES];
	memcpy(dnonce, h.u.heartbeat.nonce, sizeof(dnonce));
	struct shd_auth_hb m = {0, 1, dtag, tag, dnonce, nonce, true, h.u.heartbeat.counter};
	CHECK(shd_auth_verify(k, &m, h.u.heartbeat.mac));
	CHECK(!shd_auth_verify(other, &m, h.u.heartbeat.mac));

	h_step("C: in JOINING only a proving heartbeat completes the handshake");
	uint8_t buf[SHD_FABRIC_SMALL];
	struct shf_wire_join jn = {0};
	jn.world = 2;
	jn.uid = 1000;
	snprintf(jn.name, sizeof(jn.name), "authjob");
	struct shf_wire_range rg = {1, 1};
	long len = shf_wire_enc_join(buf, sizeof(buf), 1, 0, &jn, &rg, 1);
	CHECK(len > 0);
	h_stamp(buf, tag, dtag);
	uint64_t stale = D->st.wire_stale;
	hbs = fake_count(1, SHF_WIRE_HEARTBEAT);
	CHECK(fake_inject_raw_now(1, buf, (size_t)len) == 0);
	CHECK(D->st.wire_stale == stale && D->st.early_held == 1 && p->state == PEER_JOINING &&
	      H.joined == 0 && p->cold->n_early == 1);
	CHECK(fake_count(1, SHF_WIRE_HEARTBEAT) == hbs + 1); /* "answer me" */
	h_decode((size_t)h_last_send(1, SHF_WIRE_HEARTBEAT), &h);
	CHECK(h.u.heartbeat.flags & SHF_WIRE_HB_WAKE);
	h_stamp(buf, tag ^ 1, dtag); /* another tag of its: stale, not kept */
	CHECK(fake_inject_raw_now(1, buf, (size_t)len) == 0);
	CHECK(D->st.wire_stale == stale + 1 && p->cold->n_early == 1);
	h_stamp(buf, tag, dtag);
	send_hb(tag, dtag, nonce, other, dnonce); /* another key */
	CHECK(D->st.auth_failed == 2 && p->state == PEER_JOINING && H.peer_up[1] == 0);
	send_hb(tag, dtag, nonce, k, nonce2);      /* a MAC over another nonce of ours */
	CHECK(D->st.auth_failed == 3 && p->state == PEER_JOINING);
	send_hb(tag, dtag, nonce, k, NULL);        /* not answering our nonce */
	CHECK(D->st.auth_failed == 4 && p->state == PEER_JOINING);
	CHECK(H.joined == 0 && p->cold->n_early == 1);
	send_hb(tag, dtag, nonce, k, dnonce);
	CHECK(D->st.auth_failed == 4 && p->state == PEER_UP && H.peer_up[1] == 1);
	CHECK(p->cold->st.sessions == 1);
	CHECK(H.joined == 1 && p->cold->n_early == 0 && h_net()->early_bytes == 0);
	/* taken at once now */
	CHECK(fake_inject_raw_now(1, buf, (size_t)len) == 0);
	CHECK(H.joined == 2 && D->st.early_held == 1);

	h_step("C2: heartbeats of the session: a replay or a bad MAC is no liveness");
	p->last_heard_ns = 1;
	send_hb(tag, dtag, nonce, k, dnonce); /* the next counter: taken */
	CHECK(D->st.hb_refused == 0 && p->last_heard_ns > 1 && p->state == PEER_UP);
	uint32_t last = hb_ctr;
	p->last_heard_ns = 1;
	send_hb_ctr(tag, dtag, nonce, k, dnonce, last); /* the same again: a replay */
	CHECK(D->st.hb_refused == 1 && p->last_heard_ns == 1 && p->state == PEER_UP);
	send_hb_ctr(tag, dtag, nonce, k, dnonce, last - 1); /* an older one */
	CHECK(D->st.hb_refused == 2 && p->last_heard_ns == 1);
	send_hb_ctr(tag, dtag, nonce, other, dnonce, last + 5); /* another key */
	CHECK(D->st.hb_refused == 3 && p->last_heard_ns == 1);
	send_hb_ctr(tag, dtag, nonce, k, dnonce, last + 5); /* a gap is fine (lost ones) */
	CHECK(D->st.hb_refused == 3 && p->last_heard_ns > 1 && p->state == PEER_UP);
	CHECK(D->st.auth_failed == 4);

	h_step("D: a new session of an UP peer needs a proof over our nonce");
	const uint64_t tag2 = h_new_tag(1);
	stale = D->st.wire_stale;
	send_hb(tag2, 0, nonce2, k, NULL);
	CHECK(p->state == PEER_UP && D->st.wire_stale == stale + 1 && D->st.auth_failed == 4);
	send_hb(tag2, 0, nonce2, other, dnonce);
	CHECK(p->state == PEER_UP && D->st.auth_failed == 5);
	CHECK(shd_list_empty(&h_net()->downq));
	send_hb(tag2, 0, nonce2, k, dnonce);
	CHECK(p->state == PEER_FAILED && p->cold->next_session == tag2 && D->st.auth_failed == 5);
	shd_net_reap(D);
	CHECK(H.peer_lost[1] == 1 && p->state == PEER_JOINING && p->cold->peer_session == tag2);
	h_close();

	h_step("E: a daemon without a key refuses one with");
	o.cluster_key = NULL;
	h_open(&o);
	p = h_peer(1);
	send_hb(tag, 0, nonce, k, NULL);
	CHECK(D->st.auth_failed == 1 && p->state == PEER_UNKNOWN);
	send_hb(tag, 0, nonce, NULL, NULL);
	CHECK(D->st.auth_failed == 1 && p->state == PEER_JOINING);
	h_close();

	h_step("F: early messages are bounded and go with their tag");
	o = h_defaults();
	o.manual_up = true;
	o.cluster_key = kpath;
	o.peer_credits = 1;
	o.batch_bytes = 1024;
	o.batch_budget = 1024 * 1024; /* (its quarter, the bound over all peers, is larger) */
	h_open(&o);
	p = h_peer(1);
	hb_ctr = 0;
	const uint64_t tag3 = h_new_tag(1);
	send_hb(tag3, 0, nonce, k, NULL);
	CHECK(p->state == PEER_JOINING);
	h_decode((size_t)h_last_send(1, SHF_WIRE_HEARTBEAT), &h);
	uint64_t dtag3 = h.src_session;
	memcpy(dnonce, h.u.heartbeat.nonce, sizeof(dnonce));
	h_stamp(buf, tag3, dtag3);
	uint32_t kept = 0;
	while (D->st.early_dropped == 0) {
		CHECK(fake_inject_raw_now(1, buf, (size_t)len) == 0);
		if (D->st.early_dropped == 0)
			kept++;
		CHECK(kept < 10000);
	}
	CHECK(p->cold->n_early == kept && D->st.early_held == kept);
	CHECK(p->cold->early_bytes <= 1024u + 64u * 1024u &&
	      p->cold->early_bytes + sizeof(struct net_early) + (size_t)len > 1024u + 64u * 1024u);
	send_hb(tag3, dtag3, nonce, k, dnonce); /* the proof: up, then restarted at once */
	CHECK(p->state == PEER_FAILED && H.joined == 0 && p->cold->n_early == 0);
	CHECK(h_net()->early_bytes == 0);
	shd_net_reap(D);
	CHECK(p->state == PEER_DOWN && H.peer_lost[1] == 1);
	/* a new tag of its discards what the old one kept */
	const uint64_t tag4 = h_new_tag(1);
	send_hb(tag4, 0, nonce, k, NULL);
	CHECK(p->state == PEER_JOINING && p->cold->peer_session == tag4);
	h_decode((size_t)h_last_send(1, SHF_WIRE_HEARTBEAT), &h);
	uint64_t dtag4 = h.src_session;
	memcpy(dnonce, h.u.heartbeat.nonce, sizeof(dnonce));
	h_stamp(buf, tag4, dtag4);
	CHECK(fake_inject_raw_now(1, buf, (size_t)len) == 0);
	CHECK(p->cold->n_early == 1);
	const uint64_t tag5 = h_new_tag(1);
	send_hb(tag5, 0, nonce, k, NULL);
	CHECK(p->state == PEER_JOINING && p->cold->n_early == 0 && h_net()->early_bytes == 0);
	h_decode((size_t)h_last_send(1, SHF_WIRE_HEARTBEAT), &h);
	memcpy(dnonce, h.u.heartbeat.nonce, sizeof(dnonce));
	send_hb(tag5, h.src_session, nonce, k, dnonce);
	CHECK(p->state == PEER_UP && H.joined == 0);
	h_close();

	shd_auth_free(k);
	shd_auth_free(other);
	unlink(kpath), unlink(opath);
	rmdir(dir);
	printf("sessions-auth: ok\n");
	return 0;
}
