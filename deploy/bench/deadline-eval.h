/*
 * What deadline-eval.c and its slot tables (deadline-tabs.c) share: the
 * stream's keys, its random source, and the tables' shape.
 */
#ifndef DEADLINE_EVAL_H
#define DEADLINE_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "deadline.h"
#include "sumkey.h"

/* the plain filters' bits a key and hash functions; small cells too */
#define BITS 16
#define K 4

struct key {
	struct sumkey k;
	uint64_t stored, until, evicted;   /* ms; evicted: 0 = never */
};

/* xorshift64: the stream, the probes and the cuckoo kicks */
uint64_t rnd(void);

/*
 * One shape for the three: nslots slots, each a fingerprint (cells: the
 * cell itself, fp 1 while counted) and a deadline code, as the node has
 * them and as the peer holds them (pub: what was last published). The
 * node also keeps a count (cells, d-left) or the key that fills a slot
 * (cuckoo; a real node would find it in its claims table).
 */
enum tab_kind { T_CELLS, T_DLEFT, T_CUCKOO };

#define CUCKOO_B 4
#define CUCKOO_LOAD 0.95
#define CUCKOO_KICKS 500
#define DLEFT_D 4
#define DLEFT_B 8
#define DLEFT_LOAD 0.75
#define DLEFT_COUNT_MAX 3

struct tab {
	enum tab_kind kind;
	struct dl_form q;
	unsigned fbits, k;      /* fingerprint bits; cells: k */
	uint64_t nslots, nb;    /* nb: buckets (d-left: a sub-table's) */
	uint32_t *fp, *code, *cnt, *key;
	uint32_t *fp_pub, *code_pub;
	uint64_t base;          /* ms */
	uint64_t overflows;     /* keys the table could not take */
	bool *counted;          /* per key: in the table */
	uint32_t *scratch;      /* cells: codes recomputed at a shift */
};


/* A table of kind for nkeys keys, fingerprints of fbits, deadlines in
 * form q. */
struct tab *tab_new(enum tab_kind kind, unsigned fbits, struct dl_form q,
    size_t nkeys);
void tab_free(struct tab *t);
/* Bits a peer holds a slot in: what a lookup reads. */
unsigned tab_slot_bits(const struct tab *t);
/* The node: key id stored, and gone (evicted or lapsed). */
void tab_add(struct tab *t, const struct key *keys, uint32_t id);
void tab_remove(struct tab *t, const struct key *keys, uint32_t id);
/* The peer: whether it claims k at now. */
bool tab_claims(const struct tab *t, const struct sumkey *k, uint64_t now);
/* Both: the base moved on to now's. */
void tab_shift(struct tab *t, const struct key *keys, size_t nkeys,
    uint64_t now);
/* A publication at now: bytes sent, and *full_len what a full one
 * would take. */
size_t tab_publish(struct tab *t, uint64_t now, size_t *full_len);

#endif
