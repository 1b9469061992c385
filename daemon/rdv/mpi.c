/* SPDX-License-Identifier: MIT */
/*
 * daemon/rdv/mpi.c - the mpi rendezvous (see rdv.h): MPI_Init, one
 * MPI_Iallgather of {hostname, address} records polled with sleeps,
 * MPI_Finalize.  Every MPI call of the project is in this file.  Called by
 * rdv.c only.
 */
#include "daemon/rdv/int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "daemon/errbuf.h"

/* One record of the MPI allgather: {host[256], addr_len u32 LE, addr[128]}. */
#define MPI_REC_BYTES (SHD_RDV_HOST_MAX + 4u + SHD_RDV_ADDR_MAX)

static int mpi_err(int rc, const char *what, char *err, size_t errlen)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "error %d", rc);
	shd_errf(err, errlen, "rdv mpi: %s: %s", what, text);
	return -EIO;
}

int shd_rdv_mpi_open(struct shd_rdv *r, char *err, size_t errlen)
{
	int inited = 0, rank = 0, size = 0, rc;
	MPI_Initialized(&inited);
	if (!inited) {
		rc = MPI_Init(NULL, NULL);
		if (rc != MPI_SUCCESS)
			return mpi_err(rc, "MPI_Init", err, errlen);
		r->mpi_ours = true;
	}
	/* Errors are returned to us (and reported), not fatal. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	rc = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rc != MPI_SUCCESS)
		return mpi_err(rc, "MPI_Comm_rank/size", err, errlen);
	if (size < 1 || (uint32_t)size > SHD_RDV_NODES_MAX) {
		shd_errf(err, errlen, "rdv mpi: %d processes", size);
		return -EINVAL;
	}
	r->my_node = rank;
	r->n_nodes = (uint32_t)size;
	return 0;
}

int shd_rdv_mpi_exchange(struct shd_rdv *r, const void *addr, size_t addr_len,
			 struct shd_rdv_result *out, char *err, size_t errlen)
{
	uint8_t mine[MPI_REC_BYTES];
	uint8_t *all = NULL;
	struct shd_rdv_node *nodes = NULL;
	MPI_Request req;
	int ret, rc, flag = 0;

	memset(mine, 0, sizeof(mine));
	memcpy(mine, r->name, strlen(r->name)); /* < SHD_RDV_HOST_MAX: NUL stays */
	mine[SHD_RDV_HOST_MAX + 0] = (uint8_t)addr_len;
	mine[SHD_RDV_HOST_MAX + 1] = (uint8_t)(addr_len >> 8);
	memcpy(mine + SHD_RDV_HOST_MAX + 4, addr, addr_len);

	all = malloc((size_t)r->n_nodes * MPI_REC_BYTES);
	nodes = calloc(r->n_nodes, sizeof(*nodes));
	if (!all || !nodes) {
		ret = -ENOMEM;
		goto out;
	}
	/* Non-blocking + polling with sleeps: a blocking collective busy-waits
	 * and steals the cores of the processes sharing the node. */
	rc = MPI_Iallgather(mine, MPI_REC_BYTES, MPI_BYTE, all, MPI_REC_BYTES, MPI_BYTE,
			    MPI_COMM_WORLD, &req);
	if (rc != MPI_SUCCESS) {
		r->mpi_broken = true;
		ret = mpi_err(rc, "MPI_Iallgather", err, errlen);
		goto out;
	}
	int64_t deadline = r->timeout_ms < 0 ? -1 : now_ms() + r->timeout_ms;
	long ns = POLL_MIN_NS;
	for (;;) {
		rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			r->mpi_broken = true;
			ret = mpi_err(rc, "MPI_Test", err, errlen);
			goto out;
		}
		if (flag)
			break;
		if (expired(deadline)) {
			r->mpi_broken = true;
			shd_errf(err, errlen, "rdv mpi: allgather of %u nodes timed out after %d ms",
			       r->n_nodes, r->timeout_ms);
			ret = -ETIMEDOUT;
			goto out;
		}
		backoff(&ns);
	}
	for (uint32_t i = 0; i < r->n_nodes; i++) {
		const uint8_t *rec = all + (size_t)i * MPI_REC_BYTES;
		uint32_t len = (uint32_t)rec[SHD_RDV_HOST_MAX] |
			       (uint32_t)rec[SHD_RDV_HOST_MAX + 1] << 8 |
			       (uint32_t)rec[SHD_RDV_HOST_MAX + 2] << 16 |
			       (uint32_t)rec[SHD_RDV_HOST_MAX + 3] << 24;
		if (!memchr(rec, '\0', SHD_RDV_HOST_MAX) || len == 0 || len > SHD_RDV_ADDR_MAX) {
			shd_errf(err, errlen, "rdv mpi: malformed record from rank %u", i);
			ret = -EBADMSG;
			goto out;
		}
		memcpy(nodes[i].host, rec, SHD_RDV_HOST_MAX);
		nodes[i].addr_len = len;
		memcpy(nodes[i].addr, rec + SHD_RDV_HOST_MAX + 4, len);
	}
	rdv_result_take(out, SHD_RDV_MPI, false, r->n_nodes, r->my_node, &nodes);
	ret = 0;
out:
	free(all);
	free(nodes);
	return ret;
}

void shd_rdv_mpi_close(struct shd_rdv *r)
{
	if (!r->mpi_ours || r->mpi_broken)
		return;
	int fin = 0;
	MPI_Finalized(&fin);
	if (!fin)
		MPI_Finalize();
}
