/*
 * See manual.h. Pages are man(7), the macros every man reader knows;
 * text from the tables goes through text() so that a backslash or a
 * leading dot in a help string cannot become a request.
 */
#include "manual.h"

#include <string.h>

#include "conf.h"

const struct manual_option manual_options[] = {
	{"-c FILE", "read the configuration from FILE (libconfig syntax: "
	    "name = value;), see sumcache.conf(5)"},
	{"-o NAME=VALUE", "set a directive, after the file; repeatable"},
	{"-t", "check the configuration, print what is wrong with its file "
	    "and line, and exit"},
	{"--policy", "print the summary publishing policy this "
	    "configuration gives (sumcache-sim runs the same) and exit"},
	{"--metrics-list", "print every metric family as a Markdown table "
	    "and exit"},
	{"--make-ca DIR", "write DIR/ca.crt and DIR/ca.key (mode 0600): a "
	    "new CA for TLS interception; an existing one is never "
	    "overwritten"},
	{"--for PATTERN", "with --make-ca, repeatable: the CA may sign only "
	    "for the hosts the patterns name (*.DOMAIN or a host name: that "
	    "name and the names below it; or an IP address), in critical "
	    "X.509 name constraints; without --for it may sign for any host"},
	{"--man PAGE", "print the manual page sumcache.8 or sumcache.conf.5 "
	    "(the build installs both) and exit"},
	{"-h, --help", "print this list and every directive, and exit"},
	{"-V, --version", "print the version and exit"},
};
const size_t manual_noptions = sizeof(manual_options) /
    sizeof(manual_options[0]);

void
manual_usage(FILE *f)
{
	fprintf(f, "usage: sumcache [-c FILE] [-o NAME=VALUE]... [-t] "
	    "[--policy]\n       sumcache --make-ca DIR [--for PATTERN]...\n");
	for (size_t i = 0; i < manual_noptions; i++)
		fprintf(f, "  %-16s %s\n", manual_options[i].flags,
		    manual_options[i].help);
	fputc('\n', f);
}

/* s as man(7) text: backslashes escaped, hyphens as \- (a minus, not
 * a breakable hyphen, as options and values need), a leading dot or
 * quote made plain. */
static void
text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

static void
heading(FILE *f, const char *title, int section, const char *version,
    const char *date)
{
	fprintf(f, ".\\\" Written by sumcache --man from its own tables: edit "
	    "the code, not this page.\n.TH %s %d %s \"sumcache %s\" \"%s\"\n",
	    title, section, date, version, section == 5 ? "File Formats" :
	    "System Administration");
}

void
manual_conf(FILE *f, const char *version, const char *date)
{
	heading(f, "SUMCACHE.CONF", 5, version, date);
	fputs(".SH NAME\n"
	    "sumcache.conf \\- configuration of the sumcache caching proxy\n"
	    ".SH SYNOPSIS\n"
	    ".B /etc/sumcache/sumcache.conf\n"
	    ".SH DESCRIPTION\n"
	    "The file is read by\n.BR sumcache (8)\n"
	    "at start and again on SIGHUP. It is in libconfig syntax: one\n"
	    ".I name\n= \n.IR value ;\n"
	    "per directive, values in double quotes, a list of values in\n"
	    "square brackets for a directive that is repeatable, and\n"
	    ".B #\ncomments. Every directive can also be given on the command\n"
	    "line as\n.BI \\-o \" name\" = value\\fR,\n"
	    "which comes after the file.\n"
	    ".PP\n"
	    ".B sumcache \\-t \\-c\n.I file\n"
	    "checks a file: an unknown directive or a bad value is named with "
	    "its file and line, and nothing starts.\n"
	    ".PP\n"
	    "A reload (SIGHUP, or\n.B systemctl reload sumcache\\fR)\n"
	    "applies what a running node can change: directives marked\n"
	    ".I live\nbelow. The others keep their running value until a "
	    "restart, and the reload says which it kept.\n"
	    "A file that fails the check is refused whole, and the running\n"
	    "configuration stays.\n"
	    ".SH DIRECTIVES\n", f);
	for (size_t i = 0; i < conf_docs(); i++) {
		struct conf_doc d;
		conf_doc(i, &d);
		fputs(".TP\n.B ", f);
		text(f, d.name);
		fputs("\n", f);
		text(f, d.syntax);
		fputs("\n.br\n", f);
		text(f, d.help);
		fputs(".\n.br\nDefault: ", f);
		if (d.dflt == NULL)
			fputs("none", f);
		else if (*d.dflt == '\0')
			fputs("computed when the node starts", f);
		else {
			fputs("\\fB", f);
			text(f, d.dflt);
			fputs("\\fR", f);
		}
		fprintf(f, ".%s On reload: %s.\n", d.repeatable ? " Repeatable "
		    "(a list)." : "", d.restart ? "kept until a restart" :
		    "live");
	}
	fputs(".SH FILES\n"
	    ".TP\n.I /etc/sumcache/sumcache.conf\n"
	    "this file (a conffile of the Debian package)\n"
	    ".TP\n.I /etc/sumcache/cluster.key\n"
	    "the cluster key, when\n.B cluster_key_file\nnames it there: "
	    "readable by the sumcache user alone\n"
	    ".SH EXAMPLES\n"
	    "One node of a three-node cluster sharing summaries:\n"
	    ".PP\n.nf\n.RS\n"
	    "node_name = \"a\";\n"
	    "http_listen = \"10.0.0.1:3128\";\n"
	    "sharing = \"summary\";\n"
	    "cluster_key_file = \"/etc/sumcache/cluster.key\";\n"
	    "peer = [\"b 10.0.0.2:3128\", \"c 10.0.0.3:3128\"];\n"
	    "allow = [\"10.0.0.0/8\"];\n"
	    ".RE\n.fi\n"
	    ".SH SEE ALSO\n"
	    ".BR sumcache (8),\n.BR sumcache\\-sim (1)\n", f);
}

void
manual_sumcache(FILE *f, const char *version, const char *date)
{
	heading(f, "SUMCACHE", 8, version, date);
	fputs(".SH NAME\n"
	    "sumcache \\- caching forward proxy that shares its cache with "
	    "its peers (Summary Cache)\n"
	    ".SH SYNOPSIS\n"
	    ".B sumcache\n"
	    ".RB [ \\-c\n.IR file ]\n"
	    ".RB [ \\-o\n.IR name = value ]...\n"
	    ".RB [ \\-t ]\n"
	    ".RB [ \\-\\-policy ]\n"
	    ".br\n"
	    ".B sumcache \\-\\-make\\-ca\n.I dir\n"
	    ".SH DESCRIPTION\n"
	    ".B sumcache\n"
	    "is an HTTP caching forward proxy. Clients name it as their proxy;\n"
	    "it answers from its memory and disk caches, asks its peers for\n"
	    "what they hold, and fetches the rest from the origin, caching by\n"
	    "the rules of RFC 9111. Peers share what they cache as\n"
	    "compressed Bloom filter summaries (Summary Cache), or by ICP, or\n"
	    "place each URL on one owner. With\n.B tls_intercept\n"
	    "set it caches https:// too, under a CA of its own.\n"
	    ".SH OPTIONS\n", f);
	for (size_t i = 0; i < manual_noptions; i++) {
		fputs(".TP\n.B ", f);
		text(f, manual_options[i].flags);
		fputs("\n", f);
		text(f, manual_options[i].help);
		fputs("\n", f);
	}
	fputs(".SH SIGNALS\n"
	    ".TP\n.B SIGHUP\n"
	    "read the configuration again and apply what can change live\n"
	    "(see\n.BR sumcache.conf (5));\n"
	    "a file that fails the check is refused and the running\n"
	    "configuration stays. The access log is reopened, for logrotate.\n"
	    ".TP\n.BR SIGTERM ,\\ SIGINT\n"
	    "stop accepting, let the transactions in flight finish (at most\n"
	    ".BR shutdown_timeout ),\n"
	    "then exit 0\n"
	    ".SH FILES\n"
	    ".TP\n.I /etc/sumcache/sumcache.conf\n"
	    "the configuration, read with\n.B \\-c\n"
	    ".TP\n.I /var/log/sumcache/access.log\n"
	    "the access log in Squid's native format, when\n"
	    ".B access_log\nnames it\n"
	    ".TP\n.I /var/cache/sumcache\n"
	    "the disk tier, when\n.B cache_dir\nnames it; kept across "
	    "restarts\n"
	    ".SH EXIT STATUS\n"
	    ".TP\n.B 0\n"
	    "stopped by a signal, or an option that prints and exits did so\n"
	    ".TP\n.B 1\n"
	    "the configuration is wrong (the message names its file and\n"
	    "line), or the node could not start: an address in use, a\n"
	    "directory it cannot write\n"
	    ".TP\n.B 2\n"
	    "a command line it does not understand\n"
	    ".SH SEE ALSO\n"
	    ".BR sumcache.conf (5),\n.BR sumcache\\-sim (1),\n"
	    ".BR squid (8)\n", f);
}
