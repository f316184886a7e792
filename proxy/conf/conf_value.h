/*
 * The parsers of directive values (conf_value.c), for conf.c's table.
 */
#ifndef CONF_VALUE_H
#define CONF_VALUE_H

#include <stddef.h>

#include "conf.h"

typedef int conf_parse_f(struct conf *c, size_t off, const char *v,
    const char **why);

conf_parse_f parse_string;
conf_parse_f parse_node_name;
conf_parse_f parse_size;
conf_parse_f parse_cache_dir;
conf_parse_f parse_duration;
conf_parse_f parse_count;
conf_parse_f parse_size_auto;
conf_parse_f parse_count_auto;
conf_parse_f parse_hostport;
conf_parse_f parse_icp_listen;
conf_parse_f parse_onoff;
conf_parse_f parse_allow;
conf_parse_f parse_refresh_pattern;
conf_parse_f parse_port;
conf_parse_f parse_sharing;
conf_parse_f parse_placement;
conf_parse_f parse_weight;
conf_parse_f parse_admit_hits;
conf_parse_f parse_forwarded_for;
conf_parse_f parse_peer;
conf_parse_f parse_peer_dns;
conf_parse_f parse_nameservers;
conf_parse_f parse_hash;
conf_parse_f parse_share;

#endif
