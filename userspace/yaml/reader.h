/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A typed YAML reader (libyaml's event API) for files with a fixed schema:
 * the caller walks its mappings key by key (yr_map_begin, yr_map_next) and
 * takes typed values (yr_get_string, yr_get_int, yr_get_bool, yr_each_item);
 * every error comes with its line and column. The policy loader
 * (policy/load.c) is built on it.
 */
#ifndef EG_YAML_READER_H
#define EG_YAML_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

/* A place in the file: 1-based line and column, 0 when unknown. */
struct eg_pos {
	int line, col;
};

/* A mapping's keys and where it lives, for "'x' belongs in ..." when a key is misplaced. */
struct yr_place {
	const char *where;
	const char *const *keys;
};

struct yreader {
	/* set by the caller before yr_init() (0: the defaults) */
	void (*report)(void *arg, struct eg_pos pos, const char *msg);	/* each error */
	void *report_arg;
	const struct yr_place *places;	/* every mapping of the schema */
	size_t nplaces;
	int max_nest;			/* collections inside each other (default 64) */
	uint32_t max_items;		/* list items in the whole file (default 1,000,000) */
	size_t max_string;		/* bytes of one string (default 4096) */
	/* the reader's state */
	yaml_parser_t yp;
	yaml_event_t ev;		/* the current event */
	bool have_ev;
	bool fatal;			/* libyaml or a limit gave up: stop reading */
	bool oom;
	int depth;			/* collections open around the current event */
	const char *buf;
	size_t len;
	unsigned int nerr;		/* errors reported */
	uint32_t n_items;
};

/* A mapping being walked: its keys, the ones seen and where. */
struct yr_map {
	const char *const *keys;
	const char *where;
	uint32_t seen;
	struct eg_pos first[16];
	struct eg_pos pos;		/* of the mapping itself */
	struct eg_pos key_pos;		/* of the current key */
};

int yr_init(struct yreader *l, const char *buf, size_t len);
void yr_fini(struct yreader *l);

void yr_err(struct yreader *l, struct eg_pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Out of memory: reported once, and reading stops. */
void yr_oom(struct yreader *l);
/* Where the current event starts. */
struct eg_pos yr_ev_pos(const struct yreader *l);
/* The closest word of a NULL-terminated list, if close enough to be a typo; NULL otherwise. */
const char *yr_suggest(const char *word, const char *const *words);

/* The next event (0), or -EINVAL when reading must stop (the error is reported). */
int yr_next(struct yreader *l);
/* Consumes the node whose first event is current. */
int yr_skip(struct yreader *l);
bool yr_is_scalar(const struct yreader *l);
const char *yr_sval(const struct yreader *l);
size_t yr_slen(const struct yreader *l);
/* A plain scalar (not quoted, no tag). */
bool yr_plain(const struct yreader *l);
/* An empty, ~ or null plain scalar. */
bool yr_is_null(const struct yreader *l);
/* "a list", "a mapping", "a scalar", "a quoted string", "no value": for errors. */
const char *yr_kind(const struct yreader *l);
/* A type error at the current node, which is then skipped. */
int yr_wrong_type(struct yreader *l, const char *what, const char *want);

/*
 * Walking a mapping whose first event is current: yr_map_next() steps to
 * the next key and returns its index in keys (the value's first event
 * current), -1 at the end, -2 when reading must stop. Unknown, duplicate
 * and non-string keys are reported and skipped.
 */
void yr_map_begin(struct yreader *l, struct yr_map *it, const char *const *keys, const char *where);
int yr_map_next(struct yreader *l, struct yr_map *it);

/* A copy of the current scalar; NULL after an error (reported). */
char *yr_get_string(struct yreader *l, const char *what, bool allow_empty);
/* true/false (yes/no, on/off); 0, or what yr_wrong_type returns. */
int yr_get_bool(struct yreader *l, const char *what, bool *out);
/* 0 and *out set, 1 after an error, -EINVAL when reading must stop. */
int yr_get_int(struct yreader *l, const char *what, long long min, long long max, long long *out);
/* Counts one list item against max_items; -EINVAL past it. */
int yr_count_item(struct yreader *l, struct eg_pos pos);
/* item() for each scalar of the list at the current event (others are reported and skipped). */
int yr_each_item(struct yreader *l, const char *what, const char *want,
		 int (*item)(struct yreader *l, const char *what, void *ctx), void *ctx);

#endif
