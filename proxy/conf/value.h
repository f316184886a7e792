/*
 * The parsers of directive values (value.c), for conf.c's table.
 */
#ifndef VALUE_H
#define VALUE_H

#include <stddef.h>

#include "conf.h"

typedef int conf_parse_f(struct conf *c, size_t off, const char *v,
    const char **why);

conf_parse_f value_string;
conf_parse_f value_node_name;
conf_parse_f value_size;
conf_parse_f value_cache_dir;
conf_parse_f value_duration;
conf_parse_f value_count;
conf_parse_f value_size_auto;
conf_parse_f value_count_auto;
conf_parse_f value_workers;
conf_parse_f value_hostport;
conf_parse_f value_icp_listen;
conf_parse_f value_onoff;
conf_parse_f value_allow;
conf_parse_f value_refresh_pattern;
conf_parse_f value_host_pattern;
conf_parse_f value_bundle;
conf_parse_f value_port;
conf_parse_f value_sharing;
conf_parse_f value_placement;
conf_parse_f value_weight;
conf_parse_f value_admit_hits;
conf_parse_f value_forwarded_for;
conf_parse_f value_peer;
conf_parse_f value_peer_dns;
conf_parse_f value_nameservers;
conf_parse_f value_hash;
conf_parse_f value_share;
conf_parse_f value_share_auto;

/* What a parser takes, as the manual and --help write it ("SIZE",
 * "on | off", ...): beside the parsers, so a new one is described where
 * it is written. */
const char *value_syntax(conf_parse_f *parse);

#endif
