/*
 * main.c: the nbdraid CLI.  A table of subcommands.  Those that open the
 * array take the same key=value settings as the plugin (or config=FILE);
 * a word without '=' is a member.  Members with md superblocks need
 * nothing else (any order):
 *
 *   nbdraid info [KEY=VALUE] MEMBER...        geometry, size, block sizes
 *   nbdraid map OFFSET [KEY=VALUE] MEMBER...  where each copy of a byte is
 *   nbdraid check [--json] [KEY=VALUE] MEMBER...
 *                                             verify parity / copies,
 *                                             offline; exit 0 only if all
 *                                             agree
 *   nbdraid create --level N ... MEMBER...     a new array (cmd_create.c)
 *   nbdraid examine [--json] [--brief] MEMBER...
 *                                             superblocks (cmd_examine.c)
 *   nbdraid examine-log [--json] LOG...       a cache log's header and
 *                                             records (cmd_examine_log.c)
 *
 * and those that ask a running server, through its control socket
 * (cmd_control.c):
 *
 *   nbdraid --control PATH status [--json]    the array now
 *   nbdraid --control PATH fail MEMBER        mark a member faulty
 *   nbdraid --control PATH remove MEMBER      take a faulty member out
 *   nbdraid --control PATH add PATH [--force] add a spare (mdadm --add)
 *   nbdraid --control PATH speed MIN MAX      recovery speed, KiB/s
 *   nbdraid --control PATH scrub check|repair|stop
 *   nbdraid --control PATH cache flush         write back the cache
 *
 * Errors print "nbdraid: <cmd>: <message>" and exit 1.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

struct command {
	const char *name;
	/* Either it opens the array from the settings and runs fn... */
	int (*fn)(struct raid_array *a, int argc, char **argv);
	int nr_args;	/* positional arguments before the settings */
	bool read_only; /* never opens a member for writing */
	/* ...or it takes its own arguments. */
	int (*main)(int argc, char **argv);
	const char *usage;
};

static const char *cmd_name = "";
static int usage(FILE *f);
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

int
cli_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "nbdraid: %s: ", cmd_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

void
cli_uuid(const uint8_t *uuid, char *buf)
{
	for (unsigned i = 0; i < 16; i++) {
		buf += sprintf(buf, "%s%02x", i && i % 4 == 0 ? ":" : "",
			       uuid[i]);
	}
}

/* A time as mdadm prints one ("Mon Jan  2 15:04:05 2006", local). */
const char *
cli_time(uint64_t seconds, char *buf, size_t len)
{
	time_t t = (time_t)seconds;
	struct tm tm;

	strftime(buf, len, "%a %b %e %H:%M:%S %Y", localtime_r(&t, &tm));
	return buf;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
void
cli_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\') {
			printf("\\%c", c);
		} else if (c < 0x20) {
			printf("\\u%04x", c);
		} else {
			putchar(c);
		}
	}
	putchar('"');
}

/* "15.00 MiB 15.73 MB", as mdadm puts sizes in brackets. */
const char *
cli_human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double b = bytes / 1024.0, d = bytes / 1000.0;
	unsigned u = 0;

	while (b >= 1024 && u < 3) {
		b /= 1024;
		d /= 1000;
		u++;
	}
	snprintf(buf, len, "%.2f %s %.2f %cB", b, units[u], d, "KMGT"[u]);
	return buf;
}

char **
cli_absolute_paths(char *const *paths, unsigned n)
{
	char **abs = calloc(n ? n : 1, sizeof(*abs));

	for (unsigned i = 0; abs && i < n; i++) {
		abs[i] = realpath(paths[i], NULL);
		if (!abs[i]) {
			abs[i] = strdup(paths[i]); /* let the open say why */
		}
		if (!abs[i]) {
			cli_free_paths(abs, i);
			return NULL;
		}
	}
	return abs;
}

void
cli_free_paths(char **paths, unsigned n)
{
	for (unsigned i = 0; paths && i < n; i++) {
		free(paths[i]);
	}
	free(paths);
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

/* The control commands without --control PATH before them. */
static int
control_needed(int argc, char **argv)
{
	(void)argc;
	return cli_fail("which server? nbdraid --control PATH %s ...", argv[0]);
}

/* nbdraid --control PATH COMMAND ... (or --control=PATH). */
static int
run_control(int argc, char **argv)
{
	const char *path = argv[1] + strlen("--control");
	int i = 2;

	if (*path == '=') {
		path++;
	} else if (*path == '\0' && argc > 2) {
		path = argv[2];
		i = 3;
	} else {
		return usage(stderr);
	}
	if (i >= argc || !*path) {
		fprintf(stderr, "usage: nbdraid --control PATH status [--json] "
				"| fail MEMBER | remove MEMBER | add PATH "
				"[--force] | speed MIN MAX | scrub "
				"check|repair|stop | cache flush\n");
		return 1;
	}
	cmd_name = argv[i];
	return cmd_control(path, argc - i, argv + i);
}

/* clang-format off */
static const struct command commands[] = {
	{ "info",    cmd_info,  0, true, NULL, "info [KEY=VALUE...] MEMBER..." },
	{ "map",     cmd_map,   1, true, NULL, "map OFFSET [KEY=VALUE...] MEMBER..." },
	{ "check",   cmd_check, 0, true, NULL, "check [--json] [KEY=VALUE...] MEMBER..." },
	{ "create",  NULL,      0, false, cmd_create,
	  "create --level 0|1|5|10 [--chunk SIZE] [--layout L] [--name NAME]\n"
	  "                 [--homehost HOST] [--size SIZE] [--metadata 1.2|1.1|1.0]\n"
	  "                 [--assume-clean] [--force] [--direct] MEMBER..." },
	{ "examine", NULL,      0, true, cmd_examine,
	  "examine [--json] [--brief] MEMBER..." },
	{ "examine-log", NULL,  0, true, cmd_examine_log,
	  "examine-log [--json] LOG..." },
	{ "status",  NULL,      0, true, control_needed,
	  "--control PATH status [--json]" },
	{ "fail",    NULL,      0, false, control_needed,
	  "--control PATH fail MEMBER" },
	{ "remove",  NULL,      0, false, control_needed,
	  "--control PATH remove MEMBER" },
	{ "add",     NULL,      0, false, control_needed,
	  "--control PATH add PATH [--force]" },
	{ "speed",   NULL,      0, false, control_needed,
	  "--control PATH speed MIN MAX" },
	{ "scrub",   NULL,      0, false, control_needed,
	  "--control PATH scrub check|repair|stop" },
	{ "cache",   NULL,      0, false, control_needed,
	  "--control PATH cache flush" },
};
/* clang-format on */
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
			/* A bare word is a member (made absolute). */
			char *abs = realpath(argv[i], NULL);
			int rr = raid_config_set(&cfg, "member",
						 abs ? abs : argv[i]);

			free(abs);
			if (rr < 0) {
				goto out;
			}
			continue;
		}
		*eq = '\0';
		if (raid_config_set(&cfg, argv[i], eq + 1) < 0) {
			goto out;
		}
		*eq = '=';
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
	if (strncmp(argv[1], "--control", strlen("--control")) == 0) {
		return run_control(argc, argv);
	}
	for (size_t i = 0; i < NR_COMMANDS; i++) {
		const struct command *c = &commands[i];

		if (strcmp(argv[1], c->name) != 0) {
			continue;
		}
		cmd_name = c->name;
		if (c->main) {
			return c->main(argc - 1, argv + 1);
		}
		if (argc - 2 < c->nr_args) {
			fprintf(stderr, "usage: nbdraid %s\n", c->usage);
			return 1;
		}
		return run(c, argc - 2, argv + 2);
	}
	fprintf(stderr, "nbdraid: unknown command '%s'\n", argv[1]);
	return usage(stderr);
}
