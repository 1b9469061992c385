/* SPDX-License-Identifier: MIT */
/* tests/ctl/prom.c - see prom.h. */
#include "tests/ctl/prom.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check.h"

#define PROM_NAME "[a-zA-Z_:][a-zA-Z0-9_:]*"
#define PROM_LABEL "[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\""
#define PROM_VALUE "(-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?|NaN|\\+Inf|-Inf)"
static const char prom_sample_re[] = "^(" PROM_NAME ")(\\{" PROM_LABEL "(," PROM_LABEL
				     ")*\\})? " PROM_VALUE "( -?[0-9]+)?$";
static const char prom_help_re[] = "^# HELP (" PROM_NAME ") .*$";
static const char prom_type_re[] = "^# TYPE (" PROM_NAME ") (counter|gauge|untyped)$";

static bool has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

void prom_parse(const char *text, struct prom *p)
{
	regex_t rs, rh, rt;
	CHECK(regcomp(&rs, prom_sample_re, REG_EXTENDED) == 0);
	CHECK(regcomp(&rh, prom_help_re, REG_EXTENDED) == 0);
	CHECK(regcomp(&rt, prom_type_re, REG_EXTENDED) == 0);
	memset(p, 0, sizeof(*p));
	size_t cap = 0, tcap = 0;
	char cur[160] = "";     /* family whose samples are being read */
	char helped[160] = "";  /* last HELP name */
	char (*done)[160] = NULL; /* families already finished */
	size_t ndone = 0, dcap = 0;
	char *copy = strdup(text);
	CHECK(copy);
	CHECKF(text[0] && text[strlen(text) - 1] == '\n', "exposition does not end in a newline");
	unsigned lineno = 0;
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		regmatch_t m[4];
		lineno++;
		if (!regexec(&rh, line, 2, m, 0)) {
			char name[160];
			snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
				 line + m[1].rm_so);
			for (size_t i = 0; i < ndone; i++)
				CHECKF(strcmp(done[i], name), "line %u: family %s appears twice", lineno,
				       name);
			CHECKF(strcmp(cur, name), "line %u: second HELP for %s", lineno, name);
			if (cur[0]) {
				if (ndone == dcap) {
					dcap = dcap ? 2 * dcap : 64;
					done = realloc(done, dcap * sizeof(*done));
					CHECK(done);
				}
				snprintf(done[ndone++], sizeof(done[0]), "%s", cur);
			}
			snprintf(helped, sizeof(helped), "%s", name);
			cur[0] = '\0';
			continue;
		}
		if (!regexec(&rt, line, 3, m, 0)) {
			char name[160], type[16];
			snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
				 line + m[1].rm_so);
			snprintf(type, sizeof(type), "%.*s", (int)(m[2].rm_eo - m[2].rm_so),
				 line + m[2].rm_so);
			CHECKF(!strcmp(name, helped), "line %u: TYPE %s not right after its HELP", lineno,
			       name);
			CHECKF(!strcmp(type, "counter") == has_suffix(name, "_total"),
			       "line %u: %s is a %s: counters and only counters end in _total",
			       lineno, name, type);
			if (p->ntypes == tcap) {
				tcap = tcap ? 2 * tcap : 64;
				p->types = realloc(p->types, tcap * sizeof(*p->types));
				CHECK(p->types);
			}
			snprintf(p->types[p->ntypes++], sizeof(p->types[0]), "%s %s", name, type);
			snprintf(cur, sizeof(cur), "%s", name);
			helped[0] = '\0';
			continue;
		}
		CHECKF(line[0] != '#', "line %u: a comment that is neither HELP nor TYPE: %s", lineno,
		       line);
		CHECKF(!regexec(&rs, line, 2, m, 0), "line %u does not match the exposition format: "
		       "'%s'", lineno, line);
		char name[160];
		snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
		CHECKF(cur[0] && !strcmp(name, cur), "line %u: sample of %s outside its family (%s)",
		       lineno, name, cur[0] ? cur : "none");
		const char *sp = strrchr(line, ' ');
		CHECK(sp);
		if (p->n == cap) {
			cap = cap ? 2 * cap : 256;
			p->s = realloc(p->s, cap * sizeof(*p->s));
			CHECK(p->s);
		}
		struct prom_sample *s = &p->s[p->n];
		CHECKF((size_t)(sp - line) < sizeof(s->series), "line %u too long", lineno);
		snprintf(s->series, sizeof(s->series), "%.*s", (int)(sp - line), line);
		snprintf(s->family, sizeof(s->family), "%s", name);
		s->value = strtod(sp + 1, NULL);
		for (size_t i = 0; i < p->n; i++)
			CHECKF(strcmp(p->s[i].series, s->series), "line %u: series %s twice", lineno,
			       s->series);
		/* counters are non-negative; whole numbers unless in seconds */
		if (has_suffix(name, "_total"))
			CHECKF(s->value >= 0 && (has_suffix(name, "_seconds_total") ||
						 s->value == (double)(long long)s->value),
			       "line %u: counter %s = %s", lineno, s->series, sp + 1);
		p->n++;
	}
	free(done);
	free(copy);
	regfree(&rs);
	regfree(&rh);
	regfree(&rt);
}

double prom_get(const struct prom *p, const char *series)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->s[i].series, series))
			return p->s[i].value;
	CHECKF(false, "no series %s in the exposition", series);
	return 0;
}

const char *prom_type(const struct prom *p, const char *family, char *buf, size_t n)
{
	size_t l = strlen(family);
	for (size_t i = 0; i < p->ntypes; i++) {
		if (!strncmp(p->types[i], family, l) && p->types[i][l] == ' ') {
			snprintf(buf, n, "%s", p->types[i] + l + 1);
			return buf;
		}
	}
	return NULL;
}

void prom_free(struct prom *p)
{
	free(p->s);
	free(p->types);
	memset(p, 0, sizeof(*p));
}
