/*
 * cmd_create.c: nbdraid create: a new array on its members (raid_create),
 * with mdadm's options and defaults.
 *
 *   nbdraid create --level N [--chunk SIZE] [--layout L] [--name NAME]
 *                  [--homehost HOST] [--size SIZE] [--metadata 1.2|1.1|1.0]
 *                  [--assume-clean] [--force] [--direct] MEMBER...
 *
 * Prints what it made, and the nbdkit command line that serves it.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
	"create --level 0|1|5|10 [--chunk SIZE] [--layout L] [--name NAME]\n"
	"               [--homehost HOST] [--size SIZE] [--metadata 1.2|1.1|1.0]\n"
	"               [--assume-clean] [--force] [--direct] MEMBER...";

/* The sync's progress: a line every 10 %, or in place on a terminal. */
struct progress {
	bool tty;
	unsigned last_tenth;
};

static void
show_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	unsigned tenth = total ? done * 10 / total : 10;

	if (p->tty) {
		fprintf(stderr,
			"\rnbdraid: create: writing parity/copies: %3u%%",
			(unsigned)(total ? done * 100 / total : 100));
		if (done == total) {
			fputc('\n', stderr);
		}
	} else if (tenth != p->last_tenth) {
		fprintf(stderr,
			"nbdraid: create: writing parity/copies: %u%% (%llu of %llu units)\n",
			tenth * 10, (unsigned long long)done,
			(unsigned long long)total);
	}
	p->last_tenth = tenth;
}

static int
parse_level(const char *v, int *level)
{
	const char *s = strncmp(v, "raid", 4) == 0 ? v + 4 : v;

	if (!strcmp(s, "0") || !strcmp(s, "1") || !strcmp(s, "5") ||
	    !strcmp(s, "10")) {
		*level = atoi(s);
		return 0;
	}
	return cli_fail("--level '%s': must be 0, 1, 5 or 10", v);
}

static int
parse_metadata(const char *v, unsigned *minor)
{
	if (!strcmp(v, "1.2") || !strcmp(v, "1.1") || !strcmp(v, "1.0")) {
		*minor = v[2] - '0';
		return 0;
	}
	return cli_fail("--metadata '%s': must be 1.2, 1.1 or 1.0", v);
}

static int
parse_size(const char *opt, const char *v, uint64_t *out)
{
	if (raid_parse_size(v, out) < 0) {
		return cli_fail("%s '%s': not a size", opt, v);
	}
	return 0;
}

enum { OPT_HOMEHOST = 256, OPT_ASSUME_CLEAN, OPT_DIRECT };

static int
parse(int argc, char **argv, struct raid_create_spec *s)
{
	static const struct option opts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "layout", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'N' },
		{ "homehost", required_argument, NULL, OPT_HOMEHOST },
		{ "size", required_argument, NULL, 'z' },
		{ "metadata", required_argument, NULL, 'e' },
		{ "assume-clean", no_argument, NULL, OPT_ASSUME_CLEAN },
		{ "force", no_argument, NULL, 'f' },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ NULL, 0, NULL, 0 },
	};
	int c, r = 0;

	s->level = -1;
	s->minor = 2;
	optind = 1;
	while (r == 0 && (c = getopt_long(argc, argv, "l:c:p:N:z:e:f", opts,
					  NULL)) != -1) {
		switch (c) {
		case 'l':
			r = parse_level(optarg, &s->level);
			break;
		case 'c':
			r = parse_size("--chunk", optarg, &s->chunk_bytes);
			break;
		case 'p':
			s->layout = optarg;
			break;
		case 'N':
			s->name = optarg;
			break;
		case OPT_HOMEHOST:
			s->homehost = optarg;
			break;
		case 'z':
			r = parse_size("--size", optarg, &s->member_size);
			break;
		case 'e':
			r = parse_metadata(optarg, &s->minor);
			break;
		case OPT_ASSUME_CLEAN:
			s->assume_clean = true;
			break;
		case 'f':
			s->force = true;
			break;
		case OPT_DIRECT:
			s->direct = true;
			break;
		default:
			r = cli_fail("usage: nbdraid %s", usage_text);
		}
	}
	if (r == 0 && s->level < 0) {
		r = cli_fail("--level is required (0, 1, 5 or 10)");
	}
	if (r == 0 && optind >= argc) {
		r = cli_fail("no members given");
	}
	s->members = argv + optind;
	s->nr_members = argc - optind;
	return r;
}

/* What was made, and how to serve it. */
static void
report(const struct raid_create_spec *s, const struct raid_create_result *res,
       char *const *abs)
{
	char uuid[40];

	cli_uuid(res->uuid, uuid);
	printf("created raid%d%s%s, %u members, metadata 1.%u\n", s->level,
	       res->layout[0] ? " " : "", res->layout, s->nr_members, s->minor);
	printf("  UUID %s, name %s\n", uuid, res->name);
	printf("  each member: %llu bytes of data from offset %llu (%llu sectors)\n",
	       (unsigned long long)res->member_bytes,
	       (unsigned long long)res->data_offset,
	       (unsigned long long)res->data_offset / RAID_SECTOR_BYTES);
	printf("  %s\n", s->level == 0	   ? "no redundancy to make consistent"
			 : s->assume_clean ? "not written: --assume-clean"
			 : res->synced	   ? "in sync: parity/copies written"
				       : "in sync: the members were all holes");
	printf("serve it:\n  nbdkit raid");
	for (unsigned i = 0; i < s->nr_members; i++) {
		printf(" member=%s", abs[i]);
	}
	printf("\n");
}

int
cmd_create(int argc, char **argv)
{
	struct raid_create_spec s = { 0 };
	struct raid_create_result res;
	struct progress prog = { .tty = isatty(2), .last_tenth = 0 };
	char **abs = NULL;
	int r = parse(argc, argv, &s);

	if (r == 0) {
		abs = cli_absolute_paths(s.members, s.nr_members);
		r = abs ? 0 : cli_fail("out of memory");
	}
	if (r == 0) {
		s.members = abs;
		r = raid_create(&s, show_progress, &prog, &res) < 0 ? 1 : 0;
	}
	if (r == 0) {
		report(&s, &res, abs);
	}
	cli_free_paths(abs, s.nr_members);
	return r;
}
