/*
 * See diskrig.h.
 */
#include "diskrig.h"
#include "testrun.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

struct store_obj *
obj(const char *key, size_t body_len, char fill)
{
	struct store_body *b = store_body_new(body_len);
	struct store_meta m = {.status = 200, .response_time = OBJ_RESPONSE_TIME,
	    .initial_age = 3, .lifetime = 600, .must_revalidate = true};

	cr_assert_not_null(b);
	memset(b->data, fill, body_len);
	b->len = body_len;
	struct store_obj *o = store_obj_new(key, strlen(key),
	    "Content-Type: text/plain\r\n", 26, "gzip", 4, &m, b);
	store_body_unref(&b);
	cr_assert_not_null(o);
	return o;
}


static void
on_found(void *arg, const char *key, size_t klen, uint64_t expires_ms)
{
	(void)key;
	(void)klen;
	((struct events *)arg)->found++;
	((struct events *)arg)->expires_wrong += expires_ms != OBJ_EXPIRES_MS;
}

static void
on_lost(void *arg, const char *key, size_t klen)
{
	struct events *ev = arg;

	ev->lost++;
	snprintf(ev->last_lost, sizeof(ev->last_lost), "%.*s", (int)klen, key);
}

static void
on_relinked(void *arg, uint64_t hash, disk_ent e, disk_ent to)
{
	struct events *ev = arg;

	(void)hash;
	(void)e;
	if (to != 0)
		ev->moved++;
	else
		ev->unlinked++;
}

static void
on_stale(void *arg, uint64_t hash, disk_ent e)
{
	(void)hash;
	(void)e;
	((struct events *)arg)->stale++;
}

static void
on_scanned(void *arg)
{
	((struct events *)arg)->scanned++;
}


void
rig_open(struct rig *g, uint64_t size)
{
	struct disk_conf c = {.path = g->dir, .size = size, .threads = 2};
	struct disk_events ev = rig_events(&g->ev);
	char err[256];

	memset(&g->ev, 0, sizeof(g->ev));
	g->d = disk_open(g->base, &c, &ev, err, sizeof(err));
	cr_assert_not_null(g->d, "disk_open: %s", err);
	disk_scan(g->d);
}

void
rig_start(struct rig *g, uint64_t size)
{
	cr_assert_lt((size_t)snprintf(g->dir, sizeof(g->dir), "%s/disk.XXXXXX",
	    scratch_dir()), sizeof(g->dir));
	cr_assert_not_null(mkdtemp(g->dir));
	g->base = event_base_new();
	rig_open(g, size);
}


void
rig_stop(struct rig *g)
{
	char cmd[sizeof(g->dir) + 16];

	disk_close(&g->d);
	event_base_free(g->base);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g->dir);
	cr_assert_eq(system(cmd), 0);
}

struct got {
	bool done;
	struct store_obj *o;
};

static void
on_read(void *arg, struct store_obj *o)
{
	struct got *got = arg;

	got->done = true;
	got->o = o;
}

struct store_obj *
read_back_as(struct rig *g, const char *key, size_t mem_max, bool *at_once)
{
	disk_ent e[4];
	unsigned n = disk_lookup(g->d, XXH3_64bits(key, strlen(key)), e, 4);

	if (n == 0)
		return NULL;
	struct got got = {0};
	bool now = disk_read(g->d, e[0], mem_max, key, strlen(key), on_read,
	    &got);
	/* done has run exactly when disk_read says so */
	cr_assert_eq(now, got.done);
	if (at_once != NULL)
		*at_once = now;
	RUN_UNTIL(g, got.done);
	return got.o;
}

struct store_obj *
read_back(struct rig *g, const char *key)
{
	return read_back_as(g, key, 1 << 20, NULL);
}

void
check_read_back(struct rig *g, int i, size_t body)
{
	char key[64];

	key_of(key, sizeof(key), i);
	struct store_obj *o = read_back(g, key);
	check_body(o, body, i);
	store_obj_unref(&o);
}

void
key_of(char *buf, size_t len, int i)
{
	snprintf(buf, len, "http://origin.example/object/%d", i);
}

void
store_n(struct rig *g, int from, int n, size_t body)
{
	char key[64];

	for (int i = from; i < from + n; i++) {
		key_of(key, sizeof(key), i);
		struct store_obj *o = obj(key, body, (char)('a' + i % 26));
		/* the disk refuses rather than make the loop wait (for the
		 * next segment to be opened, for the oldest one's writes):
		 * the loop turns, and it takes the object */
		bool stored = false;
		RUN_UNTIL(g, stored || (stored = disk_store(g->d, o,
		    false) != 0));
		store_obj_unref(&o);
	}
}

void
check_body(struct store_obj *o, size_t body, int i)
{
	cr_assert_not_null(o, "object %d not read back", i);
	cr_assert_eq(o->body->len, body);
	for (size_t k = 0; k < body; k++)
		cr_assert_eq(o->body->data[k], (char)('a' + i % 26));
	cr_assert_eq(o->meta.lifetime, 600);
	cr_assert_eq(o->vary_len, 4);
}

/* The newest segment's path and length. */
void
newest_segment(const struct rig *g, char *path, size_t len, off_t *size)
{
	DIR *dp = opendir(g->dir);
	struct dirent *de;
	char best[32] = "";

	cr_assert_not_null(dp);
	while ((de = readdir(dp)) != NULL) {
		struct stat st;
		char p[512];
		if (strlen(de->d_name) >= sizeof(best))
			continue;
		snprintf(p, sizeof(p), "%s/%s", g->dir, de->d_name);
		if (strncmp(de->d_name, "seg-", 4) == 0 &&
		    strchr(de->d_name, '.') == NULL && stat(p, &st) == 0 && st.st_size > 0 &&
		    strcmp(de->d_name, best) > 0)
			memcpy(best, de->d_name, strlen(de->d_name) + 1);
	}
	closedir(dp);
	cr_assert_neq(best[0], '\0');
	snprintf(path, len, "%s/%s", g->dir, best);
	struct stat st;
	cr_assert(stat(path, &st) == 0);
	*size = st.st_size;
}

void
poke(const char *path, off_t at, uint8_t x)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, &b, 1, at), 1);
	b ^= x;
	cr_assert_eq(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

/* The key file of segment id, under g's directory. */
void
keys_file(const struct rig *g, uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/seg-%010u.keys", g->dir, id);
}


struct disk_events
rig_events(struct events *ev)
{
	return (struct disk_events){on_found, on_lost, on_relinked, on_stale,
	    on_scanned, ev};
}
