/* SPDX-License-Identifier: MIT */
/*
 * proto/stats.h - every counter the daemon keeps, from one X-macro list per
 * scope: client, daemon, peer and fabric.  The daemon declares its structs
 * and its JSON from these lists and shufflectl renders its tables and
 * Prometheus families from the same lists, so a counter cannot be kept but
 * not shown.  They are protocol: the names are the keys of shufflectl's
 * JSON schema (docs/shufflectl.md).  All counters are 64-bit and only
 * touched by the daemon's loop thread.
 *
 * X(name, kind, help): kind is COUNTER (monotonic) or GAUGE.
 */
#ifndef SHF_STATS_H
#define SHF_STATS_H

#include <stdint.h>

/* Per client session (and summed into the job and daemon totals). */
#define SHF_CLIENT_STATS(X)                                                                  \
	X(msgs_in, COUNTER, "messages taken from the client's send ring (hop 1)")            \
	X(bytes_in, COUNTER, "payload bytes taken from the send ring")                        \
	X(msgs_out, COUNTER, "messages placed in the client's delivery ring (hop 3)")        \
	X(bytes_out, COUNTER, "payload bytes placed in the delivery ring")                    \
	X(msgs_local, COUNTER, "messages from this client relayed to a rank on this node")   \
	X(msgs_remote, COUNTER, "messages from this client sent towards another node")       \
	X(ring_full_stalls, COUNTER, "times this client's next record waited for a full delivery ring") \
	X(credit_stalls, COUNTER, "times this client's next record waited for network credit") \
	X(send_sleeps, COUNTER, "times the daemon found the send ring empty and slept on its bell") \
	X(drops_dead, COUNTER, "messages from this client dropped: destination rank gone")    \
	X(drops_down, COUNTER, "messages from this client dropped: destination node down")    \
	X(flushes, COUNTER, "remote flushes completed")                                       \
	X(epochs, COUNTER, "epochs completed")                                                \
	X(send_ring_hwm, GAUGE, "send ring occupancy high-water mark (bytes)")                \
	X(deliver_ring_hwm, GAUGE, "delivery ring occupancy high-water mark (bytes)")

/* Daemon-wide counters that have no per-client meaning. */
#define SHF_DAEMON_STATS(X)                                                                  \
	X(clients_attached, COUNTER, "client sessions registered")                           \
	X(disc_bye, COUNTER, "clients detached cleanly (BYE)")                                \
	X(disc_hup, COUNTER, "clients that went away without BYE (socket closed, killed)")   \
	X(disc_proto, COUNTER, "clients cut off for a protocol violation (bad message)")     \
	X(disc_ring, COUNTER, "clients cut off for a corrupt ring or record")                \
	X(disc_timeout, COUNTER, "clients cut off because their job's world did not complete") \
	X(refused, COUNTER, "registrations refused (bad arguments, rank taken, wrong user)") \
	X(mem_refused, COUNTER, "registrations refused over a memory budget (uid_mem_max, mem_max)") \
	X(mem_bytes, GAUGE, "bytes of client regions and rank directories held now (all uids)") \
	X(ctl_requests, COUNTER, "control requests served (shufflectl)")                     \
	X(ctl_refused, COUNTER, "control commands refused: the asker is neither root, the daemon's user nor the job's owner") \
	X(ctl_cutoffs, COUNTER, "client sessions cut off by shufflectl cutoff")              \
	X(ctl_drained, COUNTER, "client sessions cut off by shufflectl drain (their job drained)") \
	X(disc_hello, COUNTER, "connections closed because no HELLO came within hello_timeout_ms") \
	X(disc_idle, COUNTER, "sessions cut off: idle_timeout_ms without registering or a request") \
	X(conn_refused_full, COUNTER, "connections refused: no free slot (max_clients, reserves)") \
	X(conn_refused_user, COUNTER, "connections refused: the user's max_clients_per_user reached") \
	X(conn_refused_fds, COUNTER, "connections refused: the daemon was out of file descriptors") \
	X(accept_fd_pauses, COUNTER, "times accepting paused because the daemon was out of file descriptors") \
	X(stray_fds, COUNTER, "file descriptors clients sent (never expected): closed off the loop, client cut off") \
	X(batches_out, COUNTER, "batches sent to other nodes")                               \
	X(batch_bytes_out, COUNTER, "bytes of batches sent (wire bytes, headers included)")  \
	X(batch_msgs_out, COUNTER, "messages in batches sent (a run counts its messages)") \
	X(batches_by_size, COUNTER, "batches sent because they reached batch_bytes")         \
	X(batches_by_linger, COUNTER, "batches sent because linger_us expired")              \
	X(batches_by_flush, COUNTER, "batches sent early for a flush or epoch")              \
	X(batches_by_idle, COUNTER, "batches sent at once: nothing was in flight to the node (linger_idle 0)") \
	X(packed_runs, COUNTER, "packed runs taken from send rings (messages of one type and length under one item header)") \
	X(batches_in, COUNTER, "batches received from other nodes")                           \
	X(batch_bytes_in, COUNTER, "bytes of batches received")                               \
	X(batch_msgs_in, COUNTER, "messages in batches received")                             \
	X(batches_parked, COUNTER, "received batches parked on a full delivery ring")        \
	X(credit_stalls, COUNTER, "times a full batch waited for credit")                     \
	X(wire_bad, COUNTER, "wire messages rejected (bad magic, version, lengths, source)") \
	X(msgs_unroutable, COUNTER, "received messages for a rank not on this node, dropped") \
	X(wire_stale, COUNTER, "wire messages of an earlier or unknown session (a restart, a link flap), dropped") \
	X(early_held, COUNTER, "peer messages of a session kept because they came before its handshake ended here (a key; its sender is up already), taken once it is up") \
	X(early_dropped, COUNTER, "such messages that did not fit the bound (peer_credits x batch_bytes + 64 KiB a peer, batch_budget / 4 in all): dropped, and the session restarted once up, so that its sender reports the loss") \
	X(wire_foreign, COUNTER, "wire messages from a sender that is not a member at its own address (not in the address vector, nor in the rendezvous under the node it claims), dropped") \
	X(lookups_deferred, COUNTER, "address lookups of claimed node ids put off because this second's lookup time (300 ms) was spent") \
	X(addr_held, COUNTER, "store addresses of a peer in a session not taken (kept its old one until silent)") \
	X(store_bad_mac, COUNTER, "records read from the tcp:// store without a MAC that verifies under the cluster key, ignored") \
	X(auth_failed, COUNTER, "peer handshakes refused: a wrong cluster key, a MAC that does not verify, or one side without a key") \
	X(hb_refused, COUNTER, "heartbeats of an up peer's session refused (a key: no counted MAC, a wrong one, or a counter not above the last: a replay); they do not count as liveness") \
	X(routing_refused, COUNTER, "peer messages refused because the sender routes otherwise (routing=direct against 2d), or comes directly from a node that is not a row or column neighbour under routing=2d") \
	X(fwd_msgs, COUNTER, "messages of other pairs forwarded one hop on (routing=2d: this node is their intermediate)") \
	X(fwd_bytes, COUNTER, "bytes of messages forwarded (FWD header included)") \
	X(fwd_dropped, COUNTER, "messages to forward dropped because the next node was not up (each tells the origin with FWD_LOST: the pair's session ends, its losses are reported there)") \
	X(fwd_sends, COUNTER, "fabric sends of forwarded messages: a FWD alone, or a FWD_BUNDLE of several (routing=2d)") \
	X(fwd_bundles, COUNTER, "FWD_BUNDLEs sent: forwarded messages for one next node sent together (each carries two or more)") \
	X(fwd_bundled_msgs, COUNTER, "forwarded messages that went in a FWD_BUNDLE") \
	X(rx_drops_down, COUNTER, "received messages still parked when their sender went down, dropped") \
	X(owner_conflicts, COUNTER, "owner conflicts: the job's home found another owner (uid) for a job with ranks here, on another node: the job fails with EACCES") \
	X(join_msgs_out, COUNTER, "job start messages sent to other nodes: joins to a job's home; maps and refusals from a home") \
	X(join_msgs_in, COUNTER, "job start messages received from other nodes (joins, maps, refusals)") \
	X(leave_msgs_out, COUNTER, "JOB_LEAVEs and JOB_LEAVE_ASKs sent to other nodes: ranks of a job left here within one 10 ms window (to its homes and the job's other nodes, or the last window to its home only), a home forwarded the leaves it relays, this node withdrew its ranks, or a relay failed") \
	X(leave_msgs_in, COUNTER, "JOB_LEAVEs and JOB_LEAVE_ASKs received from other nodes") \
	X(home_jobs, GAUGE, "jobs this node is the home of now (it collects their joins)") \
	X(rx_drops_owner, COUNTER, "received messages for a job failed by an owner conflict, dropped") \
	X(bcast_in, COUNTER, "broadcasts taken from local send rings (shf_bcast)")           \
	X(bcast_wire_copies, COUNTER, "broadcast copies appended to batches: one per other node with ranks of the job") \
	X(bcast_rx, COUNTER, "broadcast copies received from other nodes")                   \
	X(bcast_deliveries, COUNTER, "broadcast messages placed in local delivery rings (local and received)") \
	X(epochs, COUNTER, "job epochs completed on this node")                               \
	X(epoch_ns_total, COUNTER, "total time of completed epochs (ns)")                     \
	X(epoch_ns_max, GAUGE, "longest epoch (ns)")                                          \
	X(epoch_msgs_out, COUNTER, "epoch messages sent to other nodes (per phase: one up the job's tree, one to each child down it; aborts)") \
	X(epoch_msgs_in, COUNTER, "epoch messages received from other nodes")              \
	X(hb_out, COUNTER, "heartbeats made for other nodes (probes and handshakes included; those counted in hb_merged went in a waiting one's place)") \
	X(hb_merged, COUNTER, "heartbeats that took the place of an older one to the same peer still waiting for a send slot (at most one waits per peer)") \
	X(peers_idled, COUNTER, "times a peer went idle (peer_idle_ms): heartbeats to it stopped") \
	X(peers_woken, COUNTER, "times an idle peer was used again: heartbeats to it resumed") \
	X(conns_released, COUNTER, "peer connections released because both ends were idle (peer_idle_ms)") \
	X(wakes, COUNTER, "wakes of an idle or quiet peer begun here: its messages held until it answered (peer_idle_ms)") \
	X(wake_held, COUNTER, "messages other than heartbeats held while their peer was being woken") \
	X(wake_dropped, COUNTER, "held messages dropped because the woken peer failed (reported as its loss)") \
	X(peers_idle, GAUGE, "peers idle now (peer_idle_ms)")

/* Per peer node (shufflectl peers): kept by the daemon's net module. */
#define SHF_PEER_STATS(X)                                                                    \
	X(batches_out, COUNTER, "batches sent to this peer")                                  \
	X(bytes_out, COUNTER, "bytes of batches sent to this peer")                           \
	X(msgs_out, COUNTER, "messages sent to this peer")                                    \
	X(batches_in, COUNTER, "batches received from this peer")                             \
	X(bytes_in, COUNTER, "bytes of batches received from this peer")                      \
	X(msgs_in, COUNTER, "messages received from this peer")                               \
	X(credit_stalls, COUNTER, "times a full batch to this peer waited for credit")        \
	X(drops_down, COUNTER, "messages to this peer dropped because it was down")            \
	X(sessions, COUNTER, "sessions established with this peer (1 + rejoins)")

/* The libfabric endpoint (daemon/net/fabric.c), daemon-wide. */
#define SHF_FABRIC_STATS(X)                                                                  \
	X(sends, COUNTER, "fabric sends accepted")                                        \
	X(sends_queued, COUNTER, "fabric sends queued because the provider said EAGAIN")  \
	X(send_retries, COUNTER, "retries of queued fabric sends that got EAGAIN again")  \
	X(sends_done, COUNTER, "fabric send completions with success")                    \
	X(send_errors, COUNTER, "fabric send completions with an error")                  \
	X(recvs, COUNTER, "fabric messages received")                                     \
	X(recv_bytes, COUNTER, "bytes of fabric messages received")                       \
	X(recv_errors, COUNTER, "fabric receive completions with an error")               \
	X(recvs_kept, COUNTER, "receive buffers kept by the receiver")

#define SHF_STAT_FIELD(name, kind, help) uint64_t name;

struct shf_client_stats {
	SHF_CLIENT_STATS(SHF_STAT_FIELD)
};

struct shf_daemon_stats {
	SHF_DAEMON_STATS(SHF_STAT_FIELD)
};

struct shf_peer_stats {
	SHF_PEER_STATS(SHF_STAT_FIELD)
};

struct shf_fabric_stats {
	SHF_FABRIC_STATS(SHF_STAT_FIELD)
};

#endif
