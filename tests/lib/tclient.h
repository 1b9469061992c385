/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/tclient.h - what the test clients (tests/node/bc-client,
 * tests/multi/mn-client) share: a clock, sync points in a directory, and
 * opening a context whose rank and world the delivery callback may read.
 *
 *   tc_setup(who, &rank)     name for messages ("bc-client"), the caller's
 *                            rank variable; the sync directory from
 *                            SHF_TEST_SYNC (default ".")
 *   tc_fail(fmt, ...)        "WHO rank R: FAIL: ..." on stderr, exit 1
 *   tc_sync_post(fmt, ...)   create a sync point (atomically: rename)
 *   tc_sync_exists(name)     whether it exists
 *   tc_sync_wait(ms, fmt...) wait for one, failing after ms
 *   tc_open(o, cb, &rank, &world, max_world)
 *                            shf_open() with *rank and *world set BEFORE the
 *                            delivery thread starts (from SHF_RANK and
 *                            SHF_WORLD, which the tests export): the
 *                            callback runs as soon as shf_open() starts the
 *                            thread, and a write after it would race with
 *                            the callback's reads.  If the library disagrees
 *                            with the environment, fails (with a delivery
 *                            thread) or takes the library's word (without).
 */
#ifndef SHF_TESTS_LIB_TCLIENT_H
#define SHF_TESTS_LIB_TCLIENT_H

#include <shuffle.h>
#include <stdbool.h>
#include <stdint.h>

void tc_setup(const char *who, const int *rank);
void tc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int64_t tc_now_ms(void);
uint64_t tc_now_ns(void);
void tc_sleep_ms(long ms);
void tc_sync_post(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool tc_sync_exists(const char *name);
void tc_sync_wait(int timeout_ms, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct shf_ctx *tc_open(const struct shf_opts *o, shf_deliver_fn cb, void *arg, int *rank,
			int *world, int max_world);

#endif
