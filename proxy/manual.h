/*
 * The manual pages, written by the program they describe from the tables
 * it runs on: sumcache.conf(5) from the directive table (conf/conf.c) and
 * sumcache(8) from the option table below, which --help prints too. The
 * build writes both (CMakeLists.txt), so neither can drift from the code;
 * tests/man-check.sh holds them to the tables and to mandoc's lint.
 */
#ifndef MANUAL_H
#define MANUAL_H

#include <stddef.h>
#include <stdio.h>

/* sumcache's command-line options, as written and explained */
struct manual_option {
	const char *flags;      /* "-c FILE", "--make-ca DIR" */
	const char *help;
};
extern const struct manual_option manual_options[];
extern const size_t manual_noptions;

/* The options as --help lists them. */
void manual_usage(FILE *f);

/* The pages in man(7), dated date (YYYY-MM-DD) for version. */
void manual_conf(FILE *f, const char *version, const char *date);
void manual_sumcache(FILE *f, const char *version, const char *date);

#endif
