/* SPDX-License-Identifier: MIT */
/*
 * daemon/stats.h - every counter the daemon keeps, from one X-macro list per
 * scope.  The same lists declare the structs and render them (JSON,
 * Prometheus, tables), so a counter cannot be kept but not shown.
 * All counters are 64-bit and only touched by the loop thread.
 *
 * X(name, kind, help): kind is COUNTER (monotonic) or GAUGE.
 */
#ifndef SHD_STATS_H
#define SHD_STATS_H

#include <stdint.h>

/* Per client session (and summed into the job and daemon totals). */
#define SHD_CLIENT_STATS(X)                                                                  \
	X(msgs_in, COUNTER, "messages taken from the client's send ring (hop 1)")            \
	X(bytes_in, COUNTER, "payload bytes taken from the send ring")                        \
	X(msgs_out, COUNTER, "messages placed in the client's delivery ring (hop 3)")        \
	X(bytes_out, COUNTER, "payload bytes placed in the delivery ring")                    \
	X(msgs_local, COUNTER, "messages from this client relayed to a rank on this node")   \
	X(msgs_remote, COUNTER, "messages from this client sent towards another node")       \
	X(ring_full_stalls, COUNTER, "times this client's next record waited for a full delivery ring") \
	X(credit_stalls, COUNTER, "times this client's next record waited for network credit") \
	X(drops_dead, COUNTER, "messages from this client dropped: destination rank gone")    \
	X(drops_down, COUNTER, "messages from this client dropped: destination node down")    \
	X(flushes, COUNTER, "remote flushes completed")                                       \
	X(epochs, COUNTER, "epochs completed")                                                \
	X(send_ring_hwm, GAUGE, "send ring occupancy high-water mark (bytes)")                \
	X(deliver_ring_hwm, GAUGE, "delivery ring occupancy high-water mark (bytes)")

/* Daemon-wide counters that have no per-client meaning. */
#define SHD_DAEMON_STATS(X)                                                                  \
	X(clients_attached, COUNTER, "client sessions registered")                           \
	X(disc_bye, COUNTER, "clients detached cleanly (BYE)")                                \
	X(disc_hup, COUNTER, "clients that went away without BYE (socket closed, killed)")   \
	X(disc_proto, COUNTER, "clients cut off for a protocol violation (bad message)")     \
	X(disc_ring, COUNTER, "clients cut off for a corrupt ring or record")                \
	X(disc_timeout, COUNTER, "clients cut off because their job's world did not complete") \
	X(refused, COUNTER, "registrations refused (bad arguments, rank taken, wrong user)") \
	X(ctl_requests, COUNTER, "control requests served (shufflectl)")                     \
	X(batches_out, COUNTER, "batches sent to other nodes")                               \
	X(batch_bytes_out, COUNTER, "bytes of batches sent (wire bytes, headers included)")  \
	X(batch_msgs_out, COUNTER, "messages in batches sent")                               \
	X(batches_by_size, COUNTER, "batches sent because they reached batch_bytes")         \
	X(batches_by_linger, COUNTER, "batches sent because linger_us expired")              \
	X(batches_by_flush, COUNTER, "batches sent early for a flush or epoch")              \
	X(batches_in, COUNTER, "batches received from other nodes")                           \
	X(batch_bytes_in, COUNTER, "bytes of batches received")                               \
	X(batch_msgs_in, COUNTER, "messages in batches received")                             \
	X(batches_parked, COUNTER, "received batches parked on a full delivery ring")        \
	X(credit_stalls, COUNTER, "times a full batch waited for credit")                     \
	X(wire_bad, COUNTER, "wire messages rejected (bad magic, version, lengths, source)") \
	X(msgs_unroutable, COUNTER, "received messages for a rank not on this node, dropped") \
	X(epochs, COUNTER, "job epochs completed on this node")                               \
	X(epoch_ns_total, COUNTER, "total time of completed epochs (ns)")                     \
	X(epoch_ns_max, GAUGE, "longest epoch (ns)")

#define SHD_STAT_FIELD(name, kind, help) uint64_t name;

struct shd_client_stats {
	SHD_CLIENT_STATS(SHD_STAT_FIELD)
};

struct shd_daemon_stats {
	SHD_DAEMON_STATS(SHD_STAT_FIELD)
};

#endif
