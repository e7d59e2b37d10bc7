/*
 * main.c: the nbdraid CLI.  A table of subcommands, each taking the same
 * key=value settings as the plugin (or config=FILE):
 *
 *   nbdraid info KEY=VALUE...           geometry, size, block sizes
 *   nbdraid map OFFSET KEY=VALUE...     where each copy of a byte lives
 *   nbdraid check [--json] KEY=VALUE... verify parity / mirror copies,
 *                                       offline; exit 0 only if all agree
 *
 * The settings name the geometry today; once members carry superblocks,
 * `check member=...` will read it from them and the rest becomes optional.
 *
 * Errors print "nbdraid: <cmd>: <message>" and exit 1.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raid.h"

struct command {
	const char *name;
	int (*fn)(struct raid_array *a, int argc, char **argv);
	int nr_args;	/* positional arguments before the settings */
	bool read_only; /* never opens a member for writing */
	const char *usage;
};

static const char *cmd_name = "";
static bool opt_json;

static void
cli_log(enum raid_log_level lvl, const char *fmt, va_list ap)
{
	if (lvl == RAID_LOG_DEBUG && !getenv("NBDRAID_DEBUG")) {
		return;
	}
	fprintf(stderr, "nbdraid: %s: ", cmd_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static int
cmd_info(struct raid_array *a, int argc, char **argv)
{
	struct raid_info i;

	(void)argc;
	(void)argv;
	raid_get_info(a, &i);
	printf("level:            raid%d\n", i.level);
	if (i.layout[0]) {
		printf("layout:           %s\n", i.layout);
	}
	printf("members:          %u\n", i.nr_members);
	printf("chunk:            %llu\n", (unsigned long long)i.chunk_bytes);
	printf("size:             %llu\n", (unsigned long long)i.size);
	printf("data offset:      %llu (%llu sectors)\n",
	       (unsigned long long)i.data_offset,
	       (unsigned long long)i.data_offset / RAID_SECTOR_BYTES);
	printf("member data:      %llu (%llu sectors) per member\n",
	       (unsigned long long)i.member_bytes,
	       (unsigned long long)i.member_bytes / RAID_SECTOR_BYTES);
	printf("block size:       min %u, preferred %u, max %u\n", i.min_block,
	       i.preferred_block, i.max_block);
	printf("read-only:        %s\n", i.read_only ? "yes" : "no");
	return 0;
}

static int
cmd_map(struct raid_array *a, int argc, char **argv)
{
	struct raid_place p[RAID_MAX_MEMBERS];
	uint64_t off;
	int n;

	(void)argc;
	if (raid_parse_size(argv[0], &off) < 0) {
		fprintf(stderr, "nbdraid: map: offset '%s': not a size\n",
			argv[0]);
		return 1;
	}
	n = raid_locate(a, off, p, RAID_MAX_MEMBERS);
	if (n < 0) {
		fprintf(stderr, "nbdraid: map: offset %llu: beyond the array\n",
			(unsigned long long)off);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		printf("copy %d: member %u offset %llu\n", i, p[i].member,
		       (unsigned long long)p[i].offset);
	}
	return 0;
}

static int
cmd_check(struct raid_array *a, int argc, char **argv)
{
	struct raid_check_result res;
	struct raid_info i;
	const char *unit;
	int r;

	(void)argc;
	(void)argv;
	raid_get_info(a, &i);
	r = raid_check(a, &res);
	if (r < 0) {
		fprintf(stderr, "nbdraid: check: %s\n", strerror(-r));
		return 2;
	}
	unit = raid_check_unit_name(res.unit);
	if (opt_json) {
		printf("{\"level\": %d, \"layout\": \"%s\", \"members\": %u, "
		       "\"chunk\": %llu, \"unit\": \"%s\", \"checked\": %llu, "
		       "\"mismatched\": %llu, \"first_mismatched\": [",
		       i.level, i.layout, i.nr_members,
		       (unsigned long long)i.chunk_bytes, unit,
		       (unsigned long long)res.units,
		       (unsigned long long)res.mismatched);
		for (uint64_t k = 0; k < res.mismatched && k < RAID_CHECK_LIST;
		     k++) {
			printf("%s%llu", k ? ", " : "",
			       (unsigned long long)res.first[k]);
		}
		printf("]}\n");
	} else if (res.unit == RAID_CHECK_NONE) {
		printf("raid%d, %u members: no redundancy, nothing to check\n",
		       i.level, i.nr_members);
	} else {
		printf("raid%d%s%s, %u members, chunk %llu: %llu %ss checked, %llu mismatched\n",
		       i.level, i.layout[0] ? " " : "", i.layout, i.nr_members,
		       (unsigned long long)i.chunk_bytes,
		       (unsigned long long)res.units, unit,
		       (unsigned long long)res.mismatched);
		for (uint64_t k = 0; k < res.mismatched && k < RAID_CHECK_LIST;
		     k++) {
			printf("mismatched %s %llu\n", unit,
			       (unsigned long long)res.first[k]);
		}
	}
	return res.mismatched ? 1 : 0;
}

static const struct command commands[] = {
	{ "info", cmd_info, 0, true, "info KEY=VALUE..." },
	{ "map", cmd_map, 1, true, "map OFFSET KEY=VALUE..." },
	{ "check", cmd_check, 0, true, "check [--json] KEY=VALUE..." },
};
#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static int
usage(FILE *f)
{
	fprintf(f, "usage: nbdraid COMMAND [ARGS] KEY=VALUE...\n\ncommands:\n");
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		fprintf(f, "  nbdraid %s\n", commands[i].usage);
	}
	fprintf(f, "\nsettings (as for nbdkit raid):\n%s\n",
		raid_config_help());
	return f == stdout ? 0 : 1;
}

static int
run(const struct command *c, int argc, char **argv)
{
	struct raid_config cfg;
	struct raid_array *a = NULL;
	int r = 1;

	raid_config_init(&cfg);
	cfg.read_only = c->read_only;
	for (int i = c->nr_args; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (strcmp(argv[i], "--json") == 0) {
			opt_json = true;
			continue;
		}
		if (!eq) {
			fprintf(stderr,
				"nbdraid: %s: '%s': expected KEY=VALUE\n",
				c->name, argv[i]);
			goto out;
		}
		*eq = '\0';
		if (raid_config_set(&cfg, argv[i], eq + 1) < 0) {
			goto out;
		}
	}
	if (raid_open(&cfg, &a) == 0) {
		r = c->fn(a, argc, argv);
	}
out:
	raid_close(a);
	raid_config_free(&cfg);
	return r;
}

int
main(int argc, char **argv)
{
	raid_set_log(cli_log);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		return usage(argc < 2 ? stderr : stdout);
	}
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		const struct command *c = &commands[i];

		if (strcmp(argv[1], c->name) != 0) {
			continue;
		}
		cmd_name = c->name;
		if (argc - 2 < c->nr_args) {
			fprintf(stderr, "usage: nbdraid %s\n", c->usage);
			return 1;
		}
		return run(c, argc - 2, argv + 2);
	}
	fprintf(stderr, "nbdraid: unknown command '%s'\n", argv[1]);
	return usage(stderr);
}
