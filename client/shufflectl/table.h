/* SPDX-License-Identifier: MIT */
/*
 * client/shufflectl/table.h - table.c's interface inside shufflectl, for
 * render.c: number formats, column specs of JSON-row tables and their
 * cell formatters, and show_rows().  (struct table and -o are in
 * shufflectl.h: main.c uses them too.)
 */
#ifndef SHF_SHUFFLECTL_TABLE_H
#define SHF_SHUFFLECTL_TABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * One column of a table whose rows are the objects of a JSON array.  The
 * formatter returns the cell's text: buf, or a string of the document.
 */
struct col;
typedef const char *cell_fn(const json_t *row, const struct col *c, char *buf, size_t n);
struct col {
	const char *head; /* header; a trailing '>' right-aligns (numbers), '~' may be
			   * cut to fit the terminal (free text, never an identifier);
			   * -o names a column by its header without them, in any case */
	const char *key;  /* member of the row; "a.b": member b of the row's object a */
	cell_fn *fmt;
	const char *def;  /* text when the member is absent or of the wrong type (NULL:
			   * as 0 for numbers, "?" for strings) */
	const char *help; /* for -o help */
	unsigned drop;    /* 0: always shown (identifiers, the essentials); else left
			   * out on a narrow terminal, the highest first (table_col_drop);
			   * columns -o chose are all shown */
};

/* an allocation failed: say so and exit */
void oom(void) __attribute__((noreturn));

/* Numbers for people: fmt_count 1234567 -> "1,234,567"; fmt_iec bytes as
 * "1.5 MiB"; fmt_secs "4.2 s", "3m 05s"; fmt_stat a counter by its name (bytes,
 * times or counts). */
void fmt_count(unsigned long long v, char *buf, size_t n);
void fmt_iec(unsigned long long v, char *buf, size_t n);
void fmt_secs(double s, char *buf, size_t n);
void fmt_stat(const char *name, const json_t *v, char *buf, size_t n);

/* The column's member of row as a number (0 when absent). */
double col_real(const json_t *row, const struct col *c);
long long col_int(const json_t *row, const struct col *c);
/* Cell formatters of struct col: integers, counts, bytes (IEC), strings. */
const char *cell_count(const json_t *row, const struct col *c, char *buf, size_t n);
const char *cell_iec(const json_t *row, const struct col *c, char *buf, size_t n);
const char *cell_int(const json_t *row, const struct col *c, char *buf, size_t n);
const char *cell_str(const json_t *row, const struct col *c, char *buf, size_t n);

/* A table of rows (the objects of a JSON array) with these columns, or
 * the ones -o chose if cols is the spec -o applies to. */
void show_rows(const json_t *rows, const struct col *cols, size_t ncols, FILE *f);

#endif
