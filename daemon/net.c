/* SPDX-License-Identifier: MIT */
/* daemon/net.c - the network hop (single-node part; the multi-node relay is
 * being integrated: until then a daemon refuses a rendezvous other than
 * "none" with a clear error). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/log.h"
#include "daemon/net.h"

static bool alone(const struct shd_config *cfg)
{
	if (!strcmp(cfg->rendezvous, "none"))
		return true;
	if (!strcmp(cfg->rendezvous, "auto"))
		return !getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") &&
		       !getenv("SLURM_STEP_ID");
	return false;
}

int shd_net_open(struct shd_daemon *d)
{
	d->node_id = 0;
	d->n_nodes = 1;
	d->net = NULL;
	if (alone(&d->cfg))
		return 0;
	shd_err("rendezvous '%s': multi-node operation is not available in this build",
		d->cfg.rendezvous);
	return -ENOTSUP;
}

void shd_net_close(struct shd_daemon *d)
{
	d->net = NULL;
}

int shd_net_append(struct shd_daemon *d, struct shd_client *src, uint32_t node,
		   const struct shd_job *j, int32_t dst, uint32_t type, const void *data,
		   uint32_t len)
{
	return -EHOSTDOWN;
}

uint64_t shd_net_mark(struct shd_daemon *d, struct shd_client *src)
{
	return 0;
}

void shd_net_forget(struct shd_daemon *d, struct shd_client *src)
{
}

void shd_net_after_pass(struct shd_daemon *d)
{
}

void shd_net_job_rank(struct shd_daemon *d, struct shd_job *j, int32_t rank, bool joined)
{
}

void shd_net_epoch(struct shd_daemon *d, struct shd_job *j, uint32_t phase, int32_t count)
{
}

json_t *shd_net_json(struct shd_daemon *d)
{
	return json_array();
}
