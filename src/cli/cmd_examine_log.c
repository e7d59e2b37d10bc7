/*
 * cmd_examine_log.c: nbdraid examine-log [--json] LOG...: a cache log's
 * header in words (docs/cache.md, "The log format") and the records it
 * holds not yet retired, as `examine` prints a member's superblock.  It
 * reads only and claims nothing: it may look at a log in use (records
 * being appended then may count or not).
 *
 * Exit status: 0 when every path holds a sound log header, 1 otherwise
 * (none, damaged, unreadable), after printing all of them.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cache_log.h"
#include "cli.h"

static const char usage_text[] = "examine-log [--json] LOG...";

static void
print_text(const char *path, const struct clog_info *i)
{
	char uuid[40], buf[64];

	printf("%s:\n", path);
	printf("          Magic : 474c524e (nbdraid cache log)\n");
	printf("        Version : %u\n", i->version);
	cli_uuid(i->array_uuid, uuid);
	printf("     Array UUID : %s\n", uuid);
	cli_uuid(i->log_uuid, uuid);
	printf("       Log UUID : %s\n", uuid);
	printf("     Array Size : %" PRIu64 " bytes (%s)\n", i->array_size,
	       cli_human(i->array_size, buf, sizeof(buf)));
	printf("       Log Size : %" PRIu64 " bytes (%s)\n", i->log_bytes,
	       cli_human(i->log_bytes, buf, sizeof(buf)));
	printf("  Creation Time : %s\n", cli_time(i->ctime, buf, sizeof(buf)));
	printf("    Update Time : %s\n", cli_time(i->utime, buf, sizeof(buf)));
	printf("     Generation : %" PRIu64 " (slot %u; the other slot %s)\n",
	       i->generation, i->slot,
	       i->other_slot_valid ? "valid" : "damaged");
	printf("     Checkpoint : byte %" PRIu64 ", after record %" PRIu64 "\n",
	       i->tail, i->tail_prev);
	printf("  Next Sequence : %" PRIu64 " (every one below it is used)\n",
	       i->seq_limit);
	if (!i->records) {
		printf("        Records : none\n");
		printf("          State : clean (nothing to write to the array)\n");
		return;
	}
	printf("        Records : %" PRIu64 " (%" PRIu64 " .. %" PRIu64 ")\n",
	       i->records, i->first_lsn, i->last_lsn);
	printf("      Log Bytes : %" PRIu64 " (%s)\n", i->record_bytes,
	       cli_human(i->record_bytes, buf, sizeof(buf)));
	printf("     Data Bytes : %" PRIu64 " (%s)\n", i->data_bytes,
	       cli_human(i->data_bytes, buf, sizeof(buf)));
	printf("          State : dirty (records not yet on the array: the array needs this log)\n");
}

static void
print_json(const char *path, const struct clog_info *i, bool first)
{
	char au[40], lu[40];

	cli_uuid(i->array_uuid, au);
	cli_uuid(i->log_uuid, lu);
	printf("%s{\"path\": ", first ? "" : ",\n ");
	cli_json_str(path);
	printf(", \"version\": %u, \"array_uuid\": \"%s\", "
	       "\"log_uuid\": \"%s\", \"array_size\": %" PRIu64
	       ", \"log_bytes\": %" PRIu64 ", \"ctime\": %" PRIu64
	       ", \"utime\": %" PRIu64 ", \"generation\": %" PRIu64
	       ", \"slot\": %u, \"other_slot_valid\": %s, \"tail\": %" PRIu64
	       ", \"tail_prev\": %" PRIu64 ", \"seq_limit\": %" PRIu64
	       ", \"records\": %" PRIu64 ", \"first_lsn\": %" PRIu64
	       ", \"last_lsn\": %" PRIu64 ", \"record_bytes\": %" PRIu64
	       ", \"data_bytes\": %" PRIu64 "}",
	       i->version, au, lu, i->array_size, i->log_bytes, i->ctime,
	       i->utime, i->generation, i->slot,
	       i->other_slot_valid ? "true" : "false", i->tail, i->tail_prev,
	       i->seq_limit, i->records, i->first_lsn, i->last_lsn,
	       i->record_bytes, i->data_bytes);
}

int
cmd_examine_log(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, first = true;
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'j') {
			fprintf(stderr, "usage: nbdraid %s\n", usage_text);
			return 1;
		}
		json = true;
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: nbdraid %s\n", usage_text);
		return 1;
	}
	if (json) {
		printf("[");
	}
	for (int k = optind; k < argc; k++) {
		struct clog_info info;
		char why[512] = "";
		int r = clog_examine(argv[k], &info, why, sizeof(why));

		if (r < 0) {
			status = cli_fail("%s", why[0] ? why : strerror(-r));
			continue;
		}
		if (json) {
			print_json(argv[k], &info, first);
		} else {
			print_text(argv[k], &info);
		}
		first = false;
	}
	if (json) {
		printf("]\n");
	}
	return status;
}
