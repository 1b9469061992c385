/* SPDX-License-Identifier: MIT */
/*
 * tests/bench/shuffle-bench.c - all-to-all messaging throughput, latency,
 * CPU and memory of shuffle, side by side with MPI baselines measured by
 * the same harness.  An MPI program: MPI launches the ranks and carries the
 * benchmark's own coordination (barriers, reductions); in the shuffle mode
 * the messages themselves go only through include/shuffle.h.
 *
 * One run:
 *   MPI_Init; the harness's own per-rank arrays are allocated and touched;
 *   VmRSS is read ("a bare process"); the mode sets up (shf_open, buffers);
 *   node leaders find their daemon (shufflectl status/stats, or
 *   $SHF_BENCH_DAEMON_PIDS); barrier; t0 + CPU of self and daemons; the mode
 *   runs (send, then the final epoch / drain); barrier; t1 + CPU again;
 *   VmRSS/VmHWM; every rank's sent counts per destination are exchanged
 *   (MPI_Alltoall) and compared with what was received; rank 0 prints one
 *   summary (or JSON).  Exit 1 when any message was lost, duplicated,
 *   reordered within a pair, or corrupt.
 *
 * Numbers: messages/s and MB/s of payload over the slowest rank's wall
 * time; latency from the send timestamp in the payload to the check at the
 * receiver (merged log-linear histograms; payloads >= 16 B, one host);
 * CPU seconds per million messages over all ranks plus the daemons; RSS
 * beyond a bare process (VmRSS at the end minus VmRSS before set-up, max
 * over ranks); daemon VmHWM; wire bytes per cross-node message from the
 * daemons' batch_bytes_out counters.
 *
 * Usage: see usage() below, or shuffle-bench --help.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define NAME_LEN 64

static const char *const mode_names[MODE_MAX] = {
	[MODE_SHUFFLE] = "shuffle",
	[MODE_MPI_ISEND] = "mpi-isend",
	[MODE_MPI_AGG] = "mpi-agg",
	[MODE_MPI_ALLTOALLV] = "mpi-alltoallv",
	[MODE_BCAST] = "bcast",
};
/* the modes that run through the daemons */
#define SHUFFLE_MODE(m) ((m) == MODE_SHUFFLE || (m) == MODE_BCAST)

static const char *const pattern_names[PAT_MAX] = {
	[PAT_UNIFORM] = "uniform",
	[PAT_RR] = "rr",
	[PAT_HOTSPOT] = "hotspot",
	[PAT_NOSELF] = "noself",
};

static const struct bench_mode_ops *const mode_ops[MODE_MAX] = {
	[MODE_SHUFFLE] = &bench_shuffle_ops,
	[MODE_MPI_ISEND] = &bench_isend_ops,
	[MODE_MPI_AGG] = &bench_agg_ops,
	[MODE_MPI_ALLTOALLV] = &bench_alltoallv_ops,
	[MODE_BCAST] = &bench_bcast_ops,
};

/* What every rank reports to rank 0 (MPI_Gather as bytes). */
struct rank_result {
	uint64_t sent, sent_cross, received, recv_bytes, errors;
	uint64_t count_mismatch;  /* sources whose count differs from what they sent */
	uint64_t shf_sent, shf_delivered, shf_eagain, shf_blocked_ns;
	int32_t shf_valid;
	int32_t leader;
	double wall, cpu;
	int64_t rss_base_kib, rss_end_kib, hwm_kib;
	/* node leaders only */
	int32_t ndaemons, have_ctl;
	int32_t dpid[BENCH_MAX_DAEMON_PIDS];
	double dcpu[BENCH_MAX_DAEMON_PIDS];
	int64_t dhwm_kib[BENCH_MAX_DAEMON_PIDS];
	int64_t batch_bytes_out, batch_msgs_out;
	char host[NAME_LEN];
	char node[NAME_LEN];
	char first_error[200];
	char ctl_note[160];
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mpirun ... shuffle-bench [options]\n"
		"  -n, --count N        messages per rank (default 100000)\n"
		"  -t, --seconds S      send for S seconds per rank instead of a count\n"
		"  -s, --size BYTES     payload size, >= 8 (default 64); 8-byte payloads carry\n"
		"                       no timestamp, so no latency is reported for them\n"
		"  -p, --pattern P      uniform | rr | hotspot | noself (default uniform)\n"
		"  -f, --flush N        shuffle: shf_flush(SHF_FLUSH_REMOTE) every N sends\n"
		"  -e, --epoch N        shuffle: shf_epoch() every N sends\n"
		"  -d, --delay US       sleep US microseconds per delivered message\n"
		"  -r, --rate N         pace each rank to N messages/s (latency at a given load)\n"
		"  -l, --lat-every N    timestamp one message in N (default 1: every message);\n"
		"                       every message is still checked for order and loss\n"
		"  -b, --blocking       shuffle: blocking sends (default)\n"
		"      --nonblock       shuffle: SHF_NONBLOCK, retry on -EAGAIN\n"
		"      --more           shuffle: shf_send(SHF_MORE) (the library holds records\n"
		"                       and sends them grouped; the epoch at the end pushes)\n"
		"      --poll           shuffle: delivery_thread = 0, deliveries in shf_poll()\n"
		"      --ring BYTES     shuffle: ring size per direction (default: the daemon's)\n"
		"  -m, --mode M         shuffle | mpi-isend | mpi-agg | mpi-alltoallv | bcast\n"
		"                       bcast: -n rounds of shf_send to every other rank, then\n"
		"                       -n shf_bcast, each timed (messages delivered per second)\n"
		"  -w, --window N       mpi-isend: outstanding sends / posted receives (64)\n"
		"      --agg-bytes B    mpi-agg: buffer per destination (32768)\n"
		"      --agg-inflight N mpi-agg: buffers in flight and posted receives (16)\n"
		"      --round N        mpi-alltoallv: messages per rank per round (65536)\n"
		"      --seed N         destination sequence seed (1)\n"
		"      --batch N        shuffle: shf_send_many() of N records and batch delivery\n"
		"      --label TEXT     copied into the JSON output\n"
		"      --json           one JSON object on stdout (rank 0)\n"
		"Environment: SHF_SOCKET / SHF_NODE pick the node's daemon and name the node;\n"
		"SHF_SHUFFLECTL, SHF_BENCH_DAEMON_PIDS=pid,... for the daemon CPU/memory;\n"
		"SHF_BENCH_FAULT=gap|dup makes rank 0 skip or repeat one sequence number\n"
		"(a self-test: the run must then report a mismatch and exit 1).\n");
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	errno = 0;
	double mult = 1;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		mult = 1024, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1024 * 1024, end++;
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "shuffle-bench: bad %s '%s'\n", what, s);
		exit(2);
	}
	return (uint64_t)((double)v * mult);
}

static int parse_name(const char *s, const char *const *names, int n, const char *what)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	fprintf(stderr, "shuffle-bench: unknown %s '%s'\n", what, s);
	exit(2);
}

static void parse_opts(struct bench_opts *o, int argc, char **argv)
{
	enum { O_NONBLOCK = 256, O_POLL, O_RING, O_AGG_BYTES, O_AGG_INFLIGHT, O_ROUND, O_SEED,
	       O_LABEL, O_JSON, O_BATCH, O_MORE };
	static const struct option lo[] = {
		{"count", required_argument, NULL, 'n'},
		{"seconds", required_argument, NULL, 't'},
		{"size", required_argument, NULL, 's'},
		{"pattern", required_argument, NULL, 'p'},
		{"flush", required_argument, NULL, 'f'},
		{"epoch", required_argument, NULL, 'e'},
		{"delay", required_argument, NULL, 'd'},
		{"rate", required_argument, NULL, 'r'},
		{"lat-every", required_argument, NULL, 'l'},
		{"blocking", no_argument, NULL, 'b'},
		{"nonblock", no_argument, NULL, O_NONBLOCK},
		{"more", no_argument, NULL, O_MORE},
		{"poll", no_argument, NULL, O_POLL},
		{"ring", required_argument, NULL, O_RING},
		{"mode", required_argument, NULL, 'm'},
		{"window", required_argument, NULL, 'w'},
		{"agg-bytes", required_argument, NULL, O_AGG_BYTES},
		{"agg-inflight", required_argument, NULL, O_AGG_INFLIGHT},
		{"round", required_argument, NULL, O_ROUND},
		{"seed", required_argument, NULL, O_SEED},
		{"batch", required_argument, NULL, O_BATCH},
		{"label", required_argument, NULL, O_LABEL},
		{"json", no_argument, NULL, O_JSON},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	*o = (struct bench_opts){
		.count = 100000, .size = 64, .pattern = PAT_UNIFORM, .mode = MODE_SHUFFLE,
		.lat_every = 1, .window = 64, .agg_bytes = 32768, .agg_inflight = 16, .round = 65536, .seed = 1,
		.label = "",
	};
	int c;
	while ((c = getopt_long(argc, argv, "n:t:s:p:f:e:d:r:l:bm:w:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o->count = parse_u64(optarg, "count"); o->seconds = 0; break;
		case 't':
			o->seconds = strtod(optarg, NULL);
			if (!(o->seconds > 0)) {
				fprintf(stderr, "shuffle-bench: bad seconds '%s'\n", optarg);
				exit(2);
			}
			o->count = 0;
			break;
		case 's': o->size = (uint32_t)parse_u64(optarg, "size"); break;
		case 'p': o->pattern = parse_name(optarg, pattern_names, PAT_MAX, "pattern"); break;
		case 'f': o->flush_every = parse_u64(optarg, "flush interval"); break;
		case 'e': o->epoch_every = parse_u64(optarg, "epoch interval"); break;
		case 'd': o->delay_us = (unsigned)parse_u64(optarg, "delay"); break;
		case 'r':
			o->rate = strtod(optarg, NULL);
			if (!(o->rate > 0)) {
				fprintf(stderr, "shuffle-bench: bad rate '%s'\n", optarg);
				exit(2);
			}
			break;
		case 'l':
			o->lat_every = (uint32_t)parse_u64(optarg, "lat-every");
			if (!o->lat_every) {
				fprintf(stderr, "shuffle-bench: --lat-every must be >= 1\n");
				exit(2);
			}
			break;
		case 'b': o->nonblock = false; break;
		case O_NONBLOCK: o->nonblock = true; break;
		case O_MORE: o->more = true; break;
		case O_POLL: o->poll_mode = true; break;
		case O_RING: o->ring_bytes = (uint32_t)parse_u64(optarg, "ring size"); break;
		case 'm': o->mode = parse_name(optarg, mode_names, MODE_MAX, "mode"); break;
		case 'w': o->window = (uint32_t)parse_u64(optarg, "window"); break;
		case O_AGG_BYTES: o->agg_bytes = (uint32_t)parse_u64(optarg, "agg-bytes"); break;
		case O_AGG_INFLIGHT: o->agg_inflight = (uint32_t)parse_u64(optarg, "agg-inflight"); break;
		case O_ROUND: o->round = (uint32_t)parse_u64(optarg, "round"); break;
		case O_SEED: o->seed = parse_u64(optarg, "seed"); break;
		case O_BATCH: o->batch = (uint32_t)parse_u64(optarg, "batch"); break;
		case O_LABEL: o->label = optarg; break;
		case O_JSON: o->json = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "shuffle-bench: unexpected argument '%s'\n", argv[optind]);
		exit(2);
	}
	if (o->size < 8 || o->size > BENCH_MAX_PAYLOAD) {
		fprintf(stderr, "shuffle-bench: payload size must be in [8, %u]\n", BENCH_MAX_PAYLOAD);
		exit(2);
	}
	if (!o->count && !(o->seconds > 0)) {
		fprintf(stderr, "shuffle-bench: -n must be > 0\n");
		exit(2);
	}
	if (!o->window || !o->agg_inflight || !o->round || o->round > (1u << 26)) {
		fprintf(stderr, "shuffle-bench: window, agg-inflight and round must be > 0 "
			"(round at most 64 Mi)\n");
		exit(2);
	}
	if (o->mode == MODE_BCAST && (!o->count || o->flush_every || o->epoch_every ||
				      o->poll_mode)) {
		fprintf(stderr, "shuffle-bench: -m bcast takes a count (-n), and neither -f, -e "
			"nor --poll\n");
		exit(2);
	}
	if (o->more && (o->batch || o->mode == MODE_BCAST)) {
		fprintf(stderr, "shuffle-bench: --more is for shf_send(): not with --batch or "
			"-m bcast\n");
		exit(2);
	}
	if (o->batch > 65536 || (o->batch && o->mode == MODE_BCAST)) {
		fprintf(stderr, "shuffle-bench: --batch is at most 65536, and not with -m bcast\n");
		exit(2);
	}
	if (!SHUFFLE_MODE(o->mode) && (o->flush_every || o->epoch_every || o->nonblock ||
					o->poll_mode || o->ring_bytes))
		fprintf(stderr, "shuffle-bench: note: -f, -e, --nonblock, --poll and --ring "
			"apply to the shuffle mode only\n");
}

/* Index of every rank's name among the distinct names, in rank order. */
static int name_index(const char *names, int world, int *idx)
{
	int distinct = 0;
	for (int r = 0; r < world; r++) {
		idx[r] = -1;
		for (int q = 0; q < r; q++)
			if (!strncmp(names + (size_t)q * NAME_LEN, names + (size_t)r * NAME_LEN,
				     NAME_LEN)) {
				idx[r] = idx[q];
				break;
			}
		if (idx[r] < 0)
			idx[r] = distinct++;
	}
	return distinct;
}

static void find_nodes(struct bench *b, struct rank_result *me)
{
	char host[NAME_LEN] = "", node[NAME_LEN];
	gethostname(host, sizeof(host) - 1);
	const char *env = getenv("SHF_NODE");
	snprintf(node, sizeof(node), "%s", env && *env ? env : host);
	memcpy(me->host, host, NAME_LEN);
	memcpy(me->node, node, NAME_LEN);
	size_t P = (size_t)b->world;
	char *all = malloc(P * NAME_LEN);
	int *idx = malloc(P * sizeof(int));
	b->node_of = malloc(P * sizeof(int));
	if (!all || !idx || !b->node_of)
		bench_die(b, "out of memory");
	MPI_Allgather(node, NAME_LEN, MPI_CHAR, all, NAME_LEN, MPI_CHAR, MPI_COMM_WORLD);
	b->nodes = name_index(all, b->world, b->node_of);
	b->node = b->node_of[b->rank];
	b->node_leader = true;
	for (int r = 0; r < b->rank; r++)
		if (b->node_of[r] == b->node)
			b->node_leader = false;
	MPI_Allgather(host, NAME_LEN, MPI_CHAR, all, NAME_LEN, MPI_CHAR, MPI_COMM_WORLD);
	b->hosts = name_index(all, b->world, idx);
	free(all);
	free(idx);
}

/* ------------------------------------------------------------------ report */

struct summary {
	uint64_t sent, delivered, cross, errors, mismatch, payload_bytes;
	double wall, msgs_s, mb_s;
	bool latency;
	const char *latency_note;
	double p50, p99, p999;
	uint64_t samples;
	uint64_t pow2[64]; /* samples in [2^e, 2^(e+1)) ns (e = 0: below 2 ns) */
	double cpu_clients, cpu_daemons, cpu_per_m;
	int ndaemons;
	bool daemon_cpu_known;
	double rss_max_kib, rss_mean_kib, hwm_max_kib;
	double dhwm_max_kib;
	int64_t wire_bytes, wire_msgs;
	bool wire_known;
	double wire_per_msg;
	uint64_t eagain, blocked_ns;
	bool shf_mismatch;
	const char *first_error;
	const char *ctl_note;
	bool ok;
};

static void summarize(const struct bench *b, const struct rank_result *rr,
		      const struct bench_hist *hist, struct summary *s)
{
	memset(s, 0, sizeof(*s));
	int P = b->world;
	s->first_error = "";
	s->ctl_note = "";
	s->wire_known = SHUFFLE_MODE(b->o.mode);
	s->daemon_cpu_known = true;
	for (int r = 0; r < P; r++) {
		const struct rank_result *x = &rr[r];
		s->sent += x->sent;
		s->delivered += x->received;
		s->cross += x->sent_cross;
		s->errors += x->errors;
		s->mismatch += x->count_mismatch;
		s->payload_bytes += x->recv_bytes;
		s->wall = fmax(s->wall, x->wall);
		s->cpu_clients += x->cpu;
		double d = (double)(x->rss_end_kib - x->rss_base_kib);
		s->rss_max_kib = r ? fmax(s->rss_max_kib, d) : d;
		s->rss_mean_kib += d / P;
		s->hwm_max_kib = fmax(s->hwm_max_kib, (double)x->hwm_kib);
		if (x->errors && !*s->first_error)
			s->first_error = x->first_error;
		if (x->shf_valid) {
			s->eagain += x->shf_eagain;
			s->blocked_ns += x->shf_blocked_ns;
			if (x->shf_sent != x->sent || x->shf_delivered != x->received)
				s->shf_mismatch = true;
		}
		if (!x->leader)
			continue;
		if (SHUFFLE_MODE(b->o.mode)) {
			if (!x->have_ctl || x->batch_bytes_out < 0)
				s->wire_known = false;
			else {
				s->wire_bytes += x->batch_bytes_out;
				s->wire_msgs += x->batch_msgs_out;
			}
			if (x->ctl_note[0] && !*s->ctl_note)
				s->ctl_note = x->ctl_note;
		}
		for (int i = 0; i < x->ndaemons; i++) {
			/* the same daemon may be listed by several leaders of one host */
			bool dup = false;
			for (int q = 0; q < r && !dup; q++) {
				if (!rr[q].leader || strncmp(rr[q].host, x->host, NAME_LEN))
					continue;
				for (int j = 0; j < rr[q].ndaemons; j++)
					dup |= rr[q].dpid[j] == x->dpid[i];
			}
			for (int j = 0; j < i && !dup; j++)
				dup |= x->dpid[j] == x->dpid[i];
			if (dup)
				continue;
			s->ndaemons++;
			if (x->dcpu[i] < 0)
				s->daemon_cpu_known = false;
			else
				s->cpu_daemons += x->dcpu[i];
			s->dhwm_max_kib = fmax(s->dhwm_max_kib, (double)x->dhwm_kib[i]);
		}
	}
	if (SHUFFLE_MODE(b->o.mode) && s->ndaemons == 0)
		s->daemon_cpu_known = false;
	s->msgs_s = s->wall > 0 ? (double)s->delivered / s->wall : 0;
	s->mb_s = s->wall > 0 ? (double)s->payload_bytes / s->wall / 1e6 : 0;
	double cpu = s->cpu_clients + s->cpu_daemons;
	s->cpu_per_m = s->delivered ? cpu / ((double)s->delivered / 1e6) : 0;
	if (s->wire_known && s->cross)
		s->wire_per_msg = (double)s->wire_bytes / (double)s->cross;
	else
		s->wire_known = false;
	s->samples = bench_hist_count(hist);
	if (b->o.size < 16)
		s->latency_note = "8-byte payloads carry source and sequence number only: no "
				  "send timestamp, no latency";
	else if (b->hosts > 1)
		s->latency_note = "ranks on several hosts: CLOCK_MONOTONIC not comparable";
	else if (!s->samples)
		s->latency_note = "no samples";
	else {
		s->latency = true;
		s->latency_note = "send call to receiver's check, merged log-linear histograms";
		for (unsigned i = 0; i < BENCH_HIST_BUCKETS; i++) {
			/* bucket i: value i below BENCH_HIST_SUB, else exponent
			 * 5 + (i - SUB) / SUB (bench-harness.c's hist_index) */
			unsigned e = i < BENCH_HIST_SUB
					     ? (i < 2 ? 0 : 31u - (unsigned)__builtin_clz(i))
					     : 5 + (i - BENCH_HIST_SUB) / BENCH_HIST_SUB;
			s->pow2[e] += hist->n[i];
		}
		s->p50 = bench_hist_quantile(hist, 0.50) / 1e3;
		s->p99 = bench_hist_quantile(hist, 0.99) / 1e3;
		s->p999 = bench_hist_quantile(hist, 0.999) / 1e3;
	}
	s->ok = s->errors == 0 && s->mismatch == 0 && s->sent == s->delivered && !s->shf_mismatch;
}

static void print_human(const struct bench *b, const struct summary *s)
{
	const struct bench_opts *o = &b->o;
	printf("shuffle-bench: mode %s, pattern %s, payload %u B, %d ranks on %d node(s), "
	       "%d host(s)%s%s\n",
	       mode_names[o->mode], pattern_names[o->pattern], o->size, b->world, b->nodes,
	       b->hosts, *o->label ? ", " : "", o->label);
	printf("  messages    sent %llu, delivered %llu (%llu across nodes): %s\n",
	       (unsigned long long)s->sent, (unsigned long long)s->delivered,
	       (unsigned long long)s->cross,
	       s->ok ? "exactly once, per-pair order kept" : "MISMATCH");
	if (!s->ok)
		printf("  errors      %llu message errors, %llu per-source count mismatches%s; "
		       "first: %s\n",
		       (unsigned long long)s->errors, (unsigned long long)s->mismatch,
		       s->shf_mismatch ? ", client counters disagree" : "", s->first_error);
	printf("  throughput  %.3f M msgs/s, %.1f MB/s of payload (wall %.3f s, slowest rank)\n",
	       s->msgs_s / 1e6, s->mb_s, s->wall);
	if (s->latency)
		printf("  latency     p50 %.1f us, p99 %.1f us, p999 %.1f us (%llu samples; %s)\n",
		       s->p50, s->p99, s->p999, (unsigned long long)s->samples, s->latency_note);
	else
		printf("  latency     n/a: %s\n", s->latency_note);
	if (SHUFFLE_MODE(o->mode) && !s->daemon_cpu_known)
		printf("  cpu         %.3f s per M msgs, clients only (%.2f s): daemon CPU unknown "
		       "(%s)\n",
		       s->cpu_per_m, s->cpu_clients, *s->ctl_note ? s->ctl_note : "no daemon pid");
	else
		printf("  cpu         %.3f s per M msgs (clients %.2f s, %d daemon(s) %.2f s)\n",
		       s->cpu_per_m, s->cpu_clients, s->ndaemons, s->cpu_daemons);
	printf("  memory      RSS beyond a bare process: max %.0f KiB, mean %.0f KiB per rank "
	       "(VmHWM max %.0f KiB)",
	       s->rss_max_kib, s->rss_mean_kib, s->hwm_max_kib);
	if (s->ndaemons)
		printf("; daemon VmHWM max %.0f KiB", s->dhwm_max_kib);
	printf("\n");
	if (o->mode == MODE_BCAST && bench_shuffle_extra.rounds) {
		const struct bench_shuffle_extra *x = &bench_shuffle_extra;
		double each = (double)x->rounds * b->world * (b->world - 1);
		printf("  bcast       %llu rounds, %.0f messages delivered per phase: loop of shf_send "
		       "%.3f M msgs/s (%.3f s), shf_bcast %.3f M msgs/s (%.3f s): x%.2f\n",
		       (unsigned long long)x->rounds, each, each / x->loop_s / 1e6, x->loop_s,
		       each / x->bcast_s / 1e6, x->bcast_s, x->loop_s / x->bcast_s);
	}
	if (SHUFFLE_MODE(o->mode)) {
		if (s->wire_known)
			printf("  wire        %.1f B per cross-node message (%lld batch bytes; daemons "
			       "batched %lld msgs)\n",
			       s->wire_per_msg, (long long)s->wire_bytes, (long long)s->wire_msgs);
		else if (b->nodes > 1)
			printf("  wire        unknown (%s)\n",
			       *s->ctl_note ? s->ctl_note : "no daemon counters");
		printf("  client      %llu EAGAIN, %.3f s blocked in shf_send (all ranks)\n",
		       (unsigned long long)s->eagain, (double)s->blocked_ns / 1e9);
	}
}

static void print_json(const struct bench *b, const struct summary *s)
{
	const struct bench_opts *o = &b->o;
	json_t *j = json_object();
	json_object_set_new(j, "mode", json_string(mode_names[o->mode]));
	json_object_set_new(j, "label", json_string(o->label));
	json_object_set_new(j, "pattern", json_string(pattern_names[o->pattern]));
	json_object_set_new(j, "payload", json_integer(o->size));
	json_object_set_new(j, "batch", json_integer(o->batch));
	json_object_set_new(j, "ranks", json_integer(b->world));
	json_object_set_new(j, "nodes", json_integer(b->nodes));
	json_object_set_new(j, "hosts", json_integer(b->hosts));
	json_object_set_new(j, "messages_sent", json_integer((json_int_t)s->sent));
	json_object_set_new(j, "messages_delivered", json_integer((json_int_t)s->delivered));
	json_object_set_new(j, "messages_cross_node", json_integer((json_int_t)s->cross));
	json_object_set_new(j, "errors", json_integer((json_int_t)s->errors));
	json_object_set_new(j, "count_mismatches", json_integer((json_int_t)s->mismatch));
	json_object_set_new(j, "first_error", json_string(s->first_error));
	json_object_set_new(j, "ok", json_boolean(s->ok));
	json_object_set_new(j, "wall_s", json_real(s->wall));
	json_object_set_new(j, "msgs_per_s", json_real(s->msgs_s));
	json_object_set_new(j, "payload_mb_per_s", json_real(s->mb_s));
	json_t *lat = json_object();
	json_object_set_new(lat, "p50_us", s->latency ? json_real(s->p50) : json_null());
	json_object_set_new(lat, "p99_us", s->latency ? json_real(s->p99) : json_null());
	json_object_set_new(lat, "p999_us", s->latency ? json_real(s->p999) : json_null());
	json_object_set_new(lat, "samples", json_integer((json_int_t)s->samples));
	/* the histogram by powers of two: [{"lt_us": 2^(e+1) ns in us, "count"}]
	 * for the non-empty ranges */
	json_t *h = json_array();
	for (unsigned e = 0; s->latency && e < 64; e++)
		if (s->pow2[e]) {
			json_t *bk = json_object();
			json_object_set_new(bk, "lt_us", json_real(ldexp(1.0, (int)e + 1) / 1e3));
			json_object_set_new(bk, "count", json_integer((json_int_t)s->pow2[e]));
			json_array_append_new(h, bk);
		}
	json_object_set_new(lat, "hist_pow2", h);
	json_object_set_new(lat, "note", json_string(s->latency_note));
	json_object_set_new(j, "latency", lat);
	json_t *cpu = json_object();
	json_object_set_new(cpu, "clients_s", json_real(s->cpu_clients));
	json_object_set_new(cpu, "daemons_s",
			    s->daemon_cpu_known || !SHUFFLE_MODE(o->mode) ? json_real(s->cpu_daemons)
									   : json_null());
	json_object_set_new(cpu, "daemons", json_integer(s->ndaemons));
	json_object_set_new(cpu, "s_per_million_msgs", json_real(s->cpu_per_m));
	json_object_set_new(cpu, "includes_daemons",
			    json_boolean(!SHUFFLE_MODE(o->mode) || s->daemon_cpu_known));
	json_object_set_new(j, "cpu", cpu);
	json_t *mem = json_object();
	json_object_set_new(mem, "rss_beyond_bare_max_kib", json_real(s->rss_max_kib));
	json_object_set_new(mem, "rss_beyond_bare_mean_kib", json_real(s->rss_mean_kib));
	json_object_set_new(mem, "client_hwm_max_kib", json_real(s->hwm_max_kib));
	json_object_set_new(mem, "daemon_hwm_max_kib",
			    s->ndaemons ? json_real(s->dhwm_max_kib) : json_null());
	json_object_set_new(j, "memory", mem);
	json_t *wire = json_object();
	json_object_set_new(wire, "batch_bytes_out",
			    s->wire_known ? json_integer(s->wire_bytes) : json_null());
	json_object_set_new(wire, "batch_msgs_out",
			    s->wire_known ? json_integer(s->wire_msgs) : json_null());
	json_object_set_new(wire, "bytes_per_cross_node_msg",
			    s->wire_known ? json_real(s->wire_per_msg) : json_null());
	json_object_set_new(wire, "note", json_string(s->ctl_note));
	json_object_set_new(j, "wire", wire);
	if (o->mode == MODE_BCAST && bench_shuffle_extra.rounds) {
		const struct bench_shuffle_extra *x = &bench_shuffle_extra;
		double each = (double)x->rounds * b->world * (b->world - 1);
		json_t *bc = json_object();
		json_object_set_new(bc, "rounds", json_integer((json_int_t)x->rounds));
		json_object_set_new(bc, "delivered_per_phase", json_real(each));
		json_object_set_new(bc, "loop_s", json_real(x->loop_s));
		json_object_set_new(bc, "bcast_s", json_real(x->bcast_s));
		json_object_set_new(bc, "loop_msgs_s", json_real(each / x->loop_s));
		json_object_set_new(bc, "bcast_msgs_s", json_real(each / x->bcast_s));
		json_object_set_new(j, "bcast", bc);
	}
	if (SHUFFLE_MODE(o->mode)) {
		json_t *cl = json_object();
		json_object_set_new(cl, "send_eagain", json_integer((json_int_t)s->eagain));
		json_object_set_new(cl, "send_blocked_s", json_real((double)s->blocked_ns / 1e9));
		json_object_set_new(cl, "counters_agree", json_boolean(!s->shf_mismatch));
		json_object_set_new(j, "client", cl);
	}
	json_t *op = json_object();
	json_object_set_new(op, "count", json_integer((json_int_t)o->count));
	json_object_set_new(op, "seconds", json_real(o->seconds));
	json_object_set_new(op, "flush_every", json_integer((json_int_t)o->flush_every));
	json_object_set_new(op, "epoch_every", json_integer((json_int_t)o->epoch_every));
	json_object_set_new(op, "delay_us", json_integer(o->delay_us));
	json_object_set_new(op, "rate", json_real(o->rate));
	json_object_set_new(op, "lat_every", json_integer(o->lat_every));
	json_object_set_new(op, "nonblock", json_boolean(o->nonblock));
	json_object_set_new(op, "more", json_boolean(o->more));
	json_object_set_new(op, "poll", json_boolean(o->poll_mode));
	json_object_set_new(op, "ring_bytes", json_integer(o->ring_bytes));
	json_object_set_new(op, "window", json_integer(o->window));
	json_object_set_new(op, "agg_bytes", json_integer(o->agg_bytes));
	json_object_set_new(op, "agg_inflight", json_integer(o->agg_inflight));
	json_object_set_new(op, "round", json_integer(o->round));
	json_object_set_new(op, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(j, "options", op);
	char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));
	if (text)
		puts(text);
	free(text);
	json_decref(j);
}

int main(int argc, char **argv)
{
	int provided;
	/* the shuffle client's delivery thread never calls MPI */
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	static struct bench bs;
	struct bench *b = &bs;
	MPI_Comm_rank(MPI_COMM_WORLD, &b->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &b->world);
	parse_opts(&b->o, argc, argv);
	if (b->world > BENCH_MAX_RANKS)
		bench_die(b, "at most %d ranks", BENCH_MAX_RANKS);
	if (b->o.pattern == PAT_NOSELF && b->world < 2)
		bench_die(b, "pattern noself needs at least 2 ranks");
	static struct rank_result me;
	find_nodes(b, &me);
	const char *fault = getenv("SHF_BENCH_FAULT");
	if (fault && b->rank == 0)
		b->fault = !strcmp(fault, "gap") ? 1 : !strcmp(fault, "dup") ? 2 : 0;
	b->timestamps = b->o.size >= 16;
	b->progress = b->rank == 0 && isatty(2) && !getenv("SHF_BENCH_NO_PROGRESS");
	b->rng = (b->o.seed * UINT64_C(0x9E3779B97F4A7C15)) ^ ((uint64_t)b->rank + 1) * UINT64_C(0xBF58476D1CE4E5B9);
	if (!b->rng)
		b->rng = 1;
	for (int i = 0; i < 8; i++)
		bench_rand(b);

	/* The harness's own O(P) state is part of the bare process: allocate
	 * and touch it before the baseline reading. */
	size_t P = (size_t)b->world;
	b->send_seq = calloc(P, 8);
	b->recv_seq = calloc(P, 8);
	uint64_t *expect_from = calloc(P, 8);
	b->hist = calloc(1, sizeof(*b->hist));
	struct bench_hist *hist_sum = calloc(1, sizeof(*hist_sum));
	struct rank_result *all = b->rank == 0 ? calloc(P, sizeof(*all)) : NULL;
	if (!b->send_seq || !b->recv_seq || !expect_from || !b->hist || !hist_sum ||
	    (b->rank == 0 && !all))
		bench_die(b, "out of memory");
	memset(b->send_seq, 0, P * 8);
	memset(b->recv_seq, 0, P * 8);
	memset(expect_from, 0, P * 8);
	memset(b->hist, 0, sizeof(*b->hist));
	memset(hist_sum, 0, sizeof(*hist_sum));
	if (all)
		memset(all, 0, P * sizeof(*all));
	MPI_Barrier(MPI_COMM_WORLD); /* MPI's own start-up traffic is part of bare, too */
	me.rss_base_kib = bench_proc_kib(0, "VmRSS");

	const struct bench_mode_ops *ops = mode_ops[b->o.mode];
	ops->setup(b);
	static struct bench_daemons dm;
	if (SHUFFLE_MODE(b->o.mode) && b->node_leader)
		bench_daemons_pre(&dm);

	MPI_Barrier(MPI_COMM_WORLD);
	uint64_t t0 = bench_now_ns();
	b->start_ns = t0;
	b->next_progress_ns = t0 + 500000000u;
	double cpu0 = bench_self_cpu_s();
	if (b->node_leader)
		bench_daemons_cpu_start(&dm);

	ops->run(b);

	MPI_Barrier(MPI_COMM_WORLD);
	uint64_t t1 = bench_now_ns();
	double cpu1 = bench_self_cpu_s();
	if (b->node_leader)
		bench_daemons_cpu_end(&dm);
	if (b->progress_shown)
		fputc('\n', stderr);

	me.rss_end_kib = bench_proc_kib(0, "VmRSS");
	me.hwm_kib = bench_proc_kib(0, "VmHWM");
	if (b->node_leader)
		bench_daemons_post(&dm);

	/* exactly once: what each source sent me is what I received in order */
	MPI_Alltoall(b->send_seq, 1, MPI_UINT64_T, expect_from, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	for (size_t s = 0; s < P; s++)
		if (expect_from[s] != b->recv_seq[s]) {
			if (!me.count_mismatch++ && !b->errors)
				snprintf(b->first_error, sizeof(b->first_error),
					 "rank %d received %llu in order from %zu, which sent %llu",
					 b->rank, (unsigned long long)b->recv_seq[s], s,
					 (unsigned long long)expect_from[s]);
		}

	me.sent = b->sent;
	me.sent_cross = b->sent_cross;
	me.received = b->received;
	me.recv_bytes = b->recv_bytes;
	me.errors = b->errors;
	me.wall = (double)(t1 - t0) / 1e9;
	me.cpu = cpu1 - cpu0;
	me.leader = b->node_leader;
	_Static_assert(sizeof(me.first_error) == sizeof(b->first_error), "same size");
	memcpy(me.first_error, b->first_error, sizeof(me.first_error));
	if (bench_shuffle_extra.valid) {
		me.shf_valid = 1;
		me.shf_sent = bench_shuffle_extra.sent_msgs;
		me.shf_delivered = bench_shuffle_extra.delivered_msgs;
		me.shf_eagain = bench_shuffle_extra.send_eagain;
		me.shf_blocked_ns = bench_shuffle_extra.send_blocked_ns;
	}
	if (b->node_leader) {
		me.ndaemons = dm.n;
		me.have_ctl = dm.have_ctl;
		for (int i = 0; i < dm.n; i++) {
			me.dpid[i] = dm.pid[i];
			me.dcpu[i] = dm.cpu[i];
			me.dhwm_kib[i] = dm.hwm_kib[i];
		}
		me.batch_bytes_out = dm.batch_bytes_out;
		me.batch_msgs_out = dm.batch_msgs_out;
		snprintf(me.ctl_note, sizeof(me.ctl_note), "%s", dm.ctl_note);
	}
	MPI_Gather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me), MPI_BYTE, 0,
		   MPI_COMM_WORLD);
	MPI_Reduce(b->hist->n, hist_sum->n, BENCH_HIST_BUCKETS, MPI_UINT64_T, MPI_SUM, 0,
		   MPI_COMM_WORLD);

	int rc = 0;
	if (b->rank == 0) {
		struct summary s;
		summarize(b, all, hist_sum, &s);
		if (b->o.json)
			print_json(b, &s);
		else
			print_human(b, &s);
		fflush(stdout);
		rc = s.ok ? 0 : 1;
	}
	MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
	ops->teardown(b);
	free(b->send_seq);
	free(b->recv_seq);
	free(expect_from);
	free(b->hist);
	free(hist_sum);
	free(all);
	free(b->node_of);
	MPI_Finalize();
	return rc;
}
