/* SPDX-License-Identifier: MIT */
/*
 * tests/net/fabric-env.c - the environment shd_fabric_open() gives libfabric
 * before its first call (fabric_env in daemon/net/fabric.c).
 *
 * Checks, each case in its own process (setenv is process-wide):
 * - over tcp, with nothing set: FI_OFI_RXM_BUFFER_SIZE is
 *   SHD_FABRIC_RXM_BUFFER, FI_OFI_RXM_EAGER_LIMIT is SHD_FABRIC_RXM_EAGER,
 *   FI_OFI_RXM_MSG_RX_SIZE/_TX_SIZE are conn_queue;
 * - an admin's value of any of them is left alone, the others still set;
 * - another provider (verbs, usually absent here: the open may fail) gets
 *   neither the buffer size nor the eager limit.
 */
#include "net-common.h"

static const char *const vars[] = {
	"FI_OFI_RXM_BUFFER_SIZE", "FI_OFI_RXM_EAGER_LIMIT",
	"FI_OFI_RXM_MSG_RX_SIZE", "FI_OFI_RXM_MSG_TX_SIZE",
};

static void expect(const char *name, const char *want)
{
	const char *v = getenv(name);
	if (!want)
		T_ASSERT(!v, "%s set to '%s', expected unset", name, v);
	else
		T_ASSERT(v && !strcmp(v, want), "%s is '%s', expected '%s'", name,
			 v ? v : "(unset)", want);
}

static void open_close(const char *provider, bool must_open)
{
	struct shd_fabric_opts o = {.provider = provider, .conn_queue = 16};
	if (must_open) {
		shd_fabric_close(t_fabric_open("127.0.0.2", "0", &o));
		return;
	}
	struct shd_fabric *f = NULL;
	char err[256];
	o.node = "127.0.0.2";
	o.service = "0";
	if (shd_fabric_open(&o, &f, err, sizeof(err)) == 0)
		shd_fabric_close(f);
}

static void run_case(int which)
{
	char buf[24], eager[24];
	snprintf(buf, sizeof(buf), "%u", SHD_FABRIC_RXM_BUFFER);
	snprintf(eager, sizeof(eager), "%u", SHD_FABRIC_RXM_EAGER);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	switch (which) {
	case 0: /* defaults over tcp */
		open_close(NULL, true);
		expect("FI_OFI_RXM_BUFFER_SIZE", buf);
		expect("FI_OFI_RXM_EAGER_LIMIT", eager);
		expect("FI_OFI_RXM_MSG_RX_SIZE", "16");
		expect("FI_OFI_RXM_MSG_TX_SIZE", "16");
		break;
	case 1: /* an admin's buffer size and rx depth stay */
		setenv("FI_OFI_RXM_BUFFER_SIZE", "16384", 1);
		setenv("FI_OFI_RXM_MSG_RX_SIZE", "64", 1);
		open_close("tcp", true);
		expect("FI_OFI_RXM_BUFFER_SIZE", "16384");
		expect("FI_OFI_RXM_EAGER_LIMIT", eager);
		expect("FI_OFI_RXM_MSG_RX_SIZE", "64");
		expect("FI_OFI_RXM_MSG_TX_SIZE", "16");
		break;
	case 2: /* an admin's eager limit stays */
		setenv("FI_OFI_RXM_EAGER_LIMIT", "8192", 1);
		open_close("tcp;ofi_rxm", true);
		expect("FI_OFI_RXM_BUFFER_SIZE", buf);
		expect("FI_OFI_RXM_EAGER_LIMIT", "8192");
		break;
	case 3: /* not tcp: libfabric's defaults */
		open_close("verbs", false);
		expect("FI_OFI_RXM_BUFFER_SIZE", NULL);
		expect("FI_OFI_RXM_EAGER_LIMIT", NULL);
		break;
	}
}

int main(void)
{
	t_name = "fabric-env";
	t_timeout(60);
	for (int which = 0; which < 4; which++) {
		fflush(NULL);
		pid_t pid = fork();
		T_ASSERT(pid >= 0, "fork");
		if (pid == 0) {
			run_case(which);
			_exit(0);
		}
		int st;
		T_ASSERT(waitpid(pid, &st, 0) == pid, "waitpid");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			T_SKIP("case %d skipped", which);
		T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "case %d failed (status 0x%x)", which,
			 st);
	}
	fprintf(stderr, "%s: PASS\n", t_name);
	return 0;
}
