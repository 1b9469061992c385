/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/rdv.h - rendezvous: how daemons learn each other's fabric
 * addresses at startup and agree on node ids.  rdv.c (the API, the spec,
 * static), rdv/dir.c (dir) and rdv/mpi.c (mpi: every MPI call of the
 * project lives there), sharing daemon/rdv/int.h.
 *
 * Specs (the grammar is parsed in one place, rdv.c, for shd_rdv_spec_check()
 * at configuration load and for shd_rdv_open(): a spec accepted at load is
 * never refused by its syntax later):
 *   "none", "auto"         valid specs that the caller resolves (no
 *                          rendezvous, or mpi under a launcher);
 *                          shd_rdv_open() refuses them
 *   "mpi"                  MPI_Init; node id = MPI rank, nodes = MPI size;
 *                          exchange() does one MPI_Iallgather of fixed-size
 *                          {hostname, address} records, polled with short
 *                          sleeps (never a spinning wait); close() calls
 *                          MPI_Finalize.  MPI is not used afterwards.
 *   "static:H:P,H:P,..."   no exchange: node id = position in the list, my
 *                          id = the entry equal to self->bind ("H:P").
 *                          Entries follow proto/addr.h with a port
 *                          required: HOST:PORT or [IPV6]:PORT (IPv6 always
 *                          in brackets), no duplicates.  The result holds
 *                          host (without brackets) and port strings:
 *                          insert peers with shd_fabric_insert_svc().
 *   "static:@FILE"         the same list from a hostfile (read by both
 *                          shd_rdv_spec_check() and shd_rdv_open(), through
 *                          the entry parser of the inline list): one
 *                          HOST[:PORT] per line; '#' starts a comment,
 *                          blank lines and spaces/tabs/CR around the entry
 *                          are ignored; node id = position among the
 *                          entries (comments and blank lines do not
 *                          count), stable while the file is unchanged.  A
 *                          line without a port (HOST, [IPV6] or a bare
 *                          IPV6) takes the port of self->bind, which must
 *                          then be HOST:PORT: use portless lines only when
 *                          every daemon binds the same port.  A host listed
 *                          without a port may not appear on another line
 *                          (so filling in the port never makes a duplicate
 *                          that the check did not see).  Errors name the
 *                          line number.  FILE relative to the cwd.
 *   "dir:PATH:N"           (PATH not empty, N decimal in 1..2^20; PATH may
 *                          contain ':', N follows the last one)
 *                          each node writes PATH/<name>.addr (temp file +
 *                          rename: a restarted node replaces its own file
 *                          atomically), then waits (bounded) until N live
 *                          files exist; node ids = positions in the
 *                          byte-wise sorted list of their names (same name
 *                          set, same ids: a restarted node keeps its id).
 *   "dir:PATH"             (no N: the part after PATH's last ':' is not
 *                          all digits, or there is no ':') node ids are
 *                          claimed for good: at open a node takes the
 *                          smallest free id K by link()ing a file holding
 *                          its name to PATH/id.K (atomic, so concurrent
 *                          starts get distinct ids), and records K in
 *                          PATH/<name>.id; a node that finds its name in
 *                          PATH/<name>.id or in an existing PATH/id.K keeps
 *                          K (same name, same id, across restarts).  Ids
 *                          are < SHD_RDV_NODES_MAX (-ENOSPC beyond).  My
 *                          id is known after open.  The exchange cannot
 *                          wait for everyone: it returns once my own file
 *                          is written and every file present is read;
 *                          n_nodes = highest claimed id + 1 and a node not
 *                          published yet (or stale) has addr_len 0 (its
 *                          host still names it).  Late nodes: poll later
 *                          (not done here yet).
 *
 *   dir files (version 2): "shuffle-rdv 2 NAME ADDRHEX INCARNATION PID
 *   BOOT_ID PIDNS STARTTIME" - the writer's incarnation (16 hex digits),
 *   pid, /proc/sys/kernel/random/boot_id, pid namespace inode and process
 *   start time (clock ticks after boot; "-"/0 when unknown).  A file is
 *   stale, and not used, when its writer shares my boot id and pid
 *   namespace and its pid is not alive or is another process (different
 *   start time).  A file from another boot or host cannot be judged and is
 *   used (its node's own restart replaces it).  Files are never removed
 *   here (a slow node may still read them); a stale file of a node that
 *   never returns stays until the directory is cleaned.
 *
 * The two-step API lets a daemon learn its node id before it opens its
 * fabric endpoint (e.g. to bind 127.0.0.(id+2) on a single host):
 *   shd_rdv_open() -> shd_rdv_my_node() -> open fabric -> shd_rdv_exchange()
 *   -> shd_rdv_close().   shd_rdv_run() does all of it in one call.
 */
#ifndef SHD_RDV_H
#define SHD_RDV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/rdv/types.h"

struct shd_rdv;

/* Check spec's syntax exactly as shd_rdv_open() parses it (same code):
 * 0, -EINVAL with the reason in err, or -ENOMEM.  Accepts none and auto. */
int shd_rdv_spec_check(const char *spec, char *err, size_t errlen);

/* Whether spec means no rendezvous at all: none, or auto when no launcher
 * (mpirun, srun: their environment variables) started us; auto under a
 * launcher is mpi. */
bool shd_rdv_alone(const char *spec);

/* Every kind of spec, as the parser knows them, into buf[len]: "auto, none,
 * ... or tcp://HOST:PORT", or with help a phrase on each ("auto (...), ...").
 * Returns the length it wanted (as snprintf). */
size_t shd_rdv_kinds(char *buf, size_t len, bool help);

/*
 * The bind address "HOST[:PORT]" (proto/addr.h, port optional: HOST,
 * HOST:PORT, [IPV6], [IPV6]:PORT or a bare IPV6) with every "{node}"
 * replaced by node + 1.  "" gives host "" and port "" (the provider's
 * choice).  Writes host (without brackets) to host[hl] and the port ("" if
 * none) to port[pl]; 0, or -EINVAL for a bad address, a result that does
 * not fit, or "{node}" with node < 0 (the node id is not known yet).
 */
int shd_rdv_bind_split(const char *bind, int node, char *host, size_t hl, char *port, size_t pl);
/* Load-time check of a bind value (with "{node}" as node 0): 0 or -EINVAL
 * with the reason in err.  With spec (may be NULL), also refuses "{node}"
 * when that rendezvous does not know the node id before opening the
 * fabric (static, dir). */
int shd_rdv_bind_check(const char *bind, const char *spec, char *err, size_t errlen);

/* Parse spec and start (mpi: MPI_Init; dir without N: claim my id).
 * *rdv_p set only on success.  -EINVAL bad spec (err says why), -ENOENT
 * (static: bind not in the list; dir: no such directory), -ENOSPC (dir
 * without N: no free id), or another negative errno. */
int shd_rdv_open(const char *spec, const struct shd_rdv_self *self, struct shd_rdv **rdv_p,
		 char *err, size_t errlen);
/* My node id when known before the exchange (mpi, static, dir without N),
 * else -1 (dir:PATH:N). */
int shd_rdv_my_node(const struct shd_rdv *r);
/* Number of nodes: known up front for mpi, static and dir:PATH:N; for dir
 * without N, the ids claimed when open ran (highest + 1, a lower bound:
 * later nodes claim more). */
uint32_t shd_rdv_nodes(const struct shd_rdv *r);
/* The incarnation published for this node (self->incarnation, or drawn). */
uint64_t shd_rdv_incarnation(const struct shd_rdv *r);
/* Internal: tests only (the daemon reads the kind from the result). */
enum shd_rdv_kind shd_rdv_kind(const struct shd_rdv *r);

/* Publish my address (addr_len <= SHD_RDV_ADDR_MAX; ignored by static) and
 * collect everyone's.  *out is written only on success; free it with
 * shd_rdv_result_fini().  -ETIMEDOUT after timeout_ms (err names what is
 * missing, and which stale files were ignored), -EBADMSG for a malformed
 * record or file, -EEXIST when two live nodes use the same name, more than
 * N live files exist (dir:PATH:N), or an address file has no id claim (dir
 * without N: the directory was used with N).  Once only. */
int shd_rdv_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
		     struct shd_rdv_result *out, char *err, size_t errlen);

/* tcp and dir without N: the set grows after the exchange.  Look node up
 * (a node that published itself later): 0 and *out filled, -ENOENT when it
 * is not known (yet) or its file is stale, -ENOTSUP for the other kinds, or
 * the store's error (-ECONNREFUSED, -ETIMEDOUT...; the next call
 * reconnects).  Blocks for at most timeout_ms per store round trip (dir:
 * two small file reads). */
int shd_rdv_lookup(struct shd_rdv *r, uint32_t node, int timeout_ms, struct shd_rdv_node *out,
		   char *err, size_t errlen);

/* tcp: make sure the store still holds this node's id claim and record
 * (a store that restarted is empty) and publish them again if not: 1
 * published again, 0 nothing to do, -ENOTSUP for the other kinds, or the
 * store's error.  At most timeout_ms per round trip. */
/* tcp, after a refresh that published our keys again (the store lost
 * them): put back the id claim of a known node `node` named `name` unless
 * the store has one for that name.  0 or a store error. */
int shd_rdv_restore_claim(struct shd_rdv *r, uint32_t node, const char *name, char *err,
			  size_t errlen);
/* tcp with a cluster key: records read whose MAC did not verify (ignored),
 * so far; *key (NULL ok) the last one's store key. */
uint64_t shd_rdv_bad_records(const struct shd_rdv *r, const char **key);
/* tcp: what the rendezvous had to work around at open (a store that
 * named another node's id for us), for the log; NULL when nothing. */
const char *shd_rdv_warning(const struct shd_rdv *r);
int shd_rdv_refresh(struct shd_rdv *r, int timeout_ms, char *err, size_t errlen);

/* Finish (mpi: MPI_Finalize if we initialised MPI and the exchange did not
 * fail half-way; after a failed collective the process should exit and let
 * the launcher clean up).  NULL ok. */
void shd_rdv_close(struct shd_rdv *r);

/* open + exchange + close.  Internal: tests only. */
int shd_rdv_run(const char *spec, const void *addr, size_t addr_len,
		const struct shd_rdv_self *self, struct shd_rdv_result *out, char *err,
		size_t errlen);

void shd_rdv_result_fini(struct shd_rdv_result *res); /* NULL ok */

#endif /* SHD_RDV_H */
