/* SPDX-License-Identifier: MIT */
/*
 * tests/ctl/prom.h - Prometheus text exposition (shufflectl stats
 * --prometheus), parsed and validated: every line is a HELP, a TYPE
 * (counter|gauge|untyped) or a sample matching the format's grammar; each
 * family has one HELP and one TYPE before its samples, its samples are
 * contiguous, counters end in _total and gauges do not, and no series
 * (name + labels) appears twice.  Any violation fails the test.
 */
#ifndef SHF_TESTS_CTL_PROM_H
#define SHF_TESTS_CTL_PROM_H

#include <stdbool.h>
#include <stddef.h>

struct prom_sample {
	char series[512]; /* name{labels} exactly as printed */
	char family[160];
	double value;
};
struct prom {
	struct prom_sample *s;
	size_t n;
	char (*types)[200]; /* "name type" per family */
	size_t ntypes;
};
void prom_parse(const char *text, struct prom *p);
/* Value of a series; CHECKs it exists. */
double prom_get(const struct prom *p, const char *series);
/* "counter", "gauge", "untyped" or NULL */
const char *prom_type(const struct prom *p, const char *family, char *buf, size_t n);
void prom_free(struct prom *p);

#endif /* SHF_TESTS_CTL_PROM_H */
