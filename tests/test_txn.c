/*
 * A txn's parts (serve/txn.h): each feature's drop runs once when the txn
 * is freed, however often it was held, the last held first; a txn freed
 * with none held frees only itself. And SC_CAST (sc_assert.h): an object
 * that comes back through a void * as another kind stops the process.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "proxy.h"
#include "sc_assert.h"
#include "txn.h"

static struct node n;
static struct worker w;

/* A worker of a node with nothing started: enough for a txn's life. */
static void
setup(void)
{
	memset(&n, 0, sizeof(n));
	memset(&w, 0, sizeof(w));
	w.node = &n;
	w.magic = WORKER_MAGIC;
}

static char dropped[16];
static size_t ndropped;

static void
drop_a(struct txn *t)
{
	cr_assert_eq(t->magic, TXN_MAGIC, "a part is dropped before its txn");
	dropped[ndropped++] = 'a';
}

static void
drop_b(struct txn *t)
{
	(void)t;
	dropped[ndropped++] = 'b';
}

static const struct txn_part part_a = {"a", drop_a};
static const struct txn_part part_b = {"b", drop_b};

TestSuite(txn, .init = setup);

Test(txn, each_part_is_dropped_once_the_last_held_first)
{
	ndropped = 0;
	struct txn *t = txn_new(&w, NULL);
	cr_assert_not_null(t);
	txn_hold(t, &part_a);
	txn_hold(t, &part_b);
	txn_hold(t, &part_a);
	cr_assert_eq(t->nparts, 2);
	txn_free(&t);
	cr_assert_null(t);
	cr_assert_eq(ndropped, 2);
	cr_assert(memcmp(dropped, "ba", 2) == 0, "dropped %.2s", dropped);
}

Test(txn, a_txn_with_no_part_frees_only_itself)
{
	ndropped = 0;
	struct txn *t = txn_new(&w, NULL);
	cr_assert_not_null(t);
	txn_free(&t);
	txn_free(&t);   /* NULL: nothing */
	cr_assert_eq(ndropped, 0);
}

static void *
through_void(void *p)
{
	return p;
}

Test(txn, a_txn_comes_back_through_a_void_pointer_as_itself)
{
	struct txn *t = txn_new(&w, NULL);

	cr_assert_not_null(t);
	cr_assert_eq(SC_CAST(struct txn, through_void(t), TXN_MAGIC), t);
	txn_free(&t);
}

/* a worker taken for a txn: the process stops at the cast */
Test(txn, another_object_taken_for_a_txn_stops_the_process,
    .signal = SIGABRT)
{
	struct txn *t = SC_CAST(struct txn, through_void(&w), TXN_MAGIC);

	cr_log_error("the cast let a worker through as txn %p", (void *)t);
}

