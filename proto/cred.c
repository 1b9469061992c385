/* SPDX-License-Identifier: MIT */
/*
 * proto/cred.c - the daemon identity rule (cred.h).
 */
#include <errno.h>
#include <pwd.h>
#include <unistd.h>

#include "proto/cred.h"

int shf_cred_check_daemon(int fd, const char *system_user, struct ucred *cred_p)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return -errno;
	if (cred_p)
		*cred_p = cred;
	if (cred.uid == 0 || cred.uid == geteuid() || cred.uid == getuid())
		return 0;
	if (system_user && system_user[0]) {
		struct passwd pw, *res = NULL;
		char buf[1024];
		if (getpwnam_r(system_user, &pw, buf, sizeof(buf), &res) == 0 && res &&
		    res->pw_uid == cred.uid)
			return 0;
	}
	return -EPERM;
}
