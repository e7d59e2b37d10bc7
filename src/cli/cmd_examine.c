/*
 * cmd_examine.c: nbdraid examine [--json] [--brief] MEMBER...: each
 * member's md superblock in words, as `mdadm --examine` prints it, or as
 * JSON (one object per member, in a list), or --brief: one line per array
 * found, the settings that serve it (uuid=, name=, member=...).
 *
 * Exit status: 0 when every member has a sound superblock, 1 otherwise
 * (none, damaged, unreadable), after printing all of them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] = "examine [--json] [--brief] MEMBER...";

static void
role_words(const struct raid_examine *ex, char *buf, size_t len)
{
	if (ex->role < ex->raid_disks) {
		snprintf(buf, len, "Active device %u", ex->role);
	} else if (ex->role == RAID_ROLE_FAULTY) {
		snprintf(buf, len, "faulty");
	} else {
		snprintf(buf, len, "spare");
	}
}

/* One character per role: A in use, . missing. */
static void
array_state(const struct raid_examine *ex, char *buf, size_t len)
{
	unsigned r;

	for (r = 0; r < ex->raid_disks && r + 1 < len; r++) {
		bool found = false;

		for (unsigned i = 0; i < ex->max_dev; i++) {
			found |= ex->roles[i] == r;
		}
		buf[r] = found ? 'A' : '.';
	}
	buf[r] = '\0';
}

static void
print_text(const char *path, const struct raid_examine *ex)
{
	char uuid[40], buf[64], b2[64];

	printf("%s:\n", path);
	printf("          Magic : a92b4efc\n");
	printf("        Version : 1.%u\n", ex->minor);
	printf("    Feature Map : 0x%x\n", ex->feature_map);
	cli_uuid(ex->uuid, uuid);
	printf("     Array UUID : %s\n", uuid);
	printf("           Name : %s\n", ex->name);
	printf("  Creation Time : %s\n", cli_time(ex->ctime, buf, sizeof(buf)));
	printf("     Raid Level : raid%d\n", ex->level);
	printf("   Raid Devices : %u\n\n", ex->raid_disks);
	printf(" Avail Dev Size : %" PRIu64 " sectors (%s)\n", ex->data_sectors,
	       cli_human(ex->data_sectors * 512, buf, sizeof(buf)));
	if (ex->array_bytes) {
		printf("     Array Size : %" PRIu64 " KiB (%s)\n",
		       ex->array_bytes / 1024,
		       cli_human(ex->array_bytes, buf, sizeof(buf)));
	}
	if (ex->used_sectors) {
		printf("  Used Dev Size : %" PRIu64 " sectors (%s)\n",
		       ex->used_sectors,
		       cli_human(ex->used_sectors * 512, buf, sizeof(buf)));
	}
	if (ex->minor) {
		printf("    Data Offset : %" PRIu64 " sectors\n",
		       ex->data_offset);
	}
	printf("   Super Offset : %" PRIu64 " sectors\n", ex->super_offset);
	if (ex->feature_map & 0x2) {
		printf("Recovery Offset : %" PRIu64 " sectors\n",
		       ex->recovery_offset);
	}
	printf("          State : %s\n",
	       ex->resync_offset == UINT64_MAX ? "clean" : "active");
	cli_uuid(ex->device_uuid, uuid);
	printf("    Device UUID : %s\n\n", uuid);
	if (ex->feature_map & 0x1) {
		printf("Internal Bitmap : %d sectors from superblock\n",
		       ex->bitmap_offset);
	}
	printf("    Update Time : %s\n", cli_time(ex->utime, buf, sizeof(buf)));
	if (ex->bblog_sectors) {
		printf("  Bad Block Log : %u entries available at offset %d sectors\n",
		       ex->bblog_sectors * 64, ex->bblog_offset);
	}
	if (ex->checksum == ex->checksum_expected) {
		printf("       Checksum : %x - correct\n", ex->checksum);
	} else {
		printf("       Checksum : %x - expected %x\n", ex->checksum,
		       ex->checksum_expected);
	}
	printf("         Events : %" PRIu64 "\n\n", ex->events);
	if (ex->layout[0]) {
		printf("         Layout : %s\n", ex->layout);
	}
	if (ex->chunk_bytes) {
		printf("     Chunk Size : %" PRIu64 "K\n\n",
		       ex->chunk_bytes / 1024);
	}
	role_words(ex, buf, sizeof(buf));
	printf("   Device Role : %s\n", buf);
	array_state(ex, b2, sizeof(b2));
	printf("   Array State : %s ('A' == active, '.' == missing)\n", b2);
}

static void
print_json(const char *path, const struct raid_examine *ex, bool first)
{
	char uuid[40], duuid[40], role[64];

	cli_uuid(ex->uuid, uuid);
	cli_uuid(ex->device_uuid, duuid);
	role_words(ex, role, sizeof(role));
	printf("%s{\"path\": ", first ? "" : ",\n ");
	cli_json_str(path);
	printf(", \"name\": ");
	cli_json_str(ex->name);
	printf(", \"version\": \"1.%u\", \"feature_map\": %u, "
	       "\"array_uuid\": \"%s\", \"ctime\": %" PRIu64
	       ", \"utime\": %" PRIu64 ", \"level\": %d, \"layout\": \"%s\", "
	       "\"md_layout\": %u, \"chunk_bytes\": %" PRIu64
	       ", \"raid_devices\": %u, \"array_bytes\": %" PRIu64
	       ", \"used_dev_sectors\": %" PRIu64
	       ", \"avail_dev_sectors\": %" PRIu64
	       ", \"data_offset_sectors\": %" PRIu64
	       ", \"super_offset_sectors\": %" PRIu64
	       ", \"recovery_offset_sectors\": %" PRIu64 ", \"state\": \"%s\", "
	       "\"resync_offset\": %" PRIu64 ", \"events\": %" PRIu64
	       ", \"device_uuid\": \"%s\", \"dev_number\": %u, \"role\": %u, "
	       "\"role_words\": \"%s\", \"bitmap_offset\": %d, "
	       "\"checksum\": %u, \"checksum_ok\": %s, \"roles\": [",
	       ex->minor, ex->feature_map, uuid, ex->ctime, ex->utime,
	       ex->level, ex->layout, ex->md_layout, ex->chunk_bytes,
	       ex->raid_disks, ex->array_bytes, ex->used_sectors,
	       ex->data_sectors, ex->data_offset, ex->super_offset,
	       ex->recovery_offset,
	       ex->resync_offset == UINT64_MAX ? "clean" : "active",
	       ex->resync_offset, ex->events, duuid, ex->dev_number, ex->role,
	       role, (ex->feature_map & 0x1) ? ex->bitmap_offset : 0,
	       ex->checksum,
	       ex->checksum == ex->checksum_expected ? "true" : "false");
	for (unsigned i = 0; i < ex->max_dev; i++) {
		printf("%s%u", i ? ", " : "", ex->roles[i]);
	}
	printf("]}");
}

/* --brief: one line per array: the settings that serve it. */
static void
print_brief(char **paths, struct raid_examine *ex, const bool *ok, unsigned n)
{
	bool *done = calloc(n, sizeof(*done));
	char uuid[40];

	for (unsigned i = 0; done && i < n; i++) {
		if (!ok[i] || done[i]) {
			continue;
		}
		cli_uuid(ex[i].uuid, uuid);
		printf("uuid=%s name=%s", uuid, ex[i].name);
		for (unsigned j = i; j < n; j++) {
			if (ok[j] && !memcmp(ex[i].uuid, ex[j].uuid, 16)) {
				printf(" member=%s", paths[j]);
				done[j] = true;
			}
		}
		printf("\n");
	}
	free(done);
}

int
cmd_examine(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "brief", no_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false, brief = false, *ok;
	struct raid_examine *ex;
	char **paths, why[256];
	int c, status = 0;
	unsigned n, shown = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jb", opts, NULL)) != -1) {
		if (c == 'j') {
			json = true;
		} else if (c == 'b') {
			brief = true;
		} else {
			return cli_fail("usage: nbdraid %s", usage_text);
		}
	}
	n = argc - optind;
	if (!n) {
		return cli_fail("usage: nbdraid %s", usage_text);
	}
	paths = cli_absolute_paths(argv + optind, n);
	ex = calloc(n, sizeof(*ex));
	ok = calloc(n, sizeof(*ok));
	if (!paths || !ex || !ok) {
		return cli_fail("out of memory");
	}
	if (json) {
		printf("[");
	}
	for (unsigned i = 0; i < n; i++) {
		int r = raid_examine(paths[i], &ex[i], why, sizeof(why));

		if (r < 0 && r != -EBADMSG) {
			cli_fail("%s: %s", paths[i], why);
			status = 1;
			if (r != -EUCLEAN) {
				continue; /* else shown, and refused */
			}
		}
		status |= r < 0;
		ok[i] = r == 0;
		if (json) {
			print_json(paths[i], &ex[i], shown++ == 0);
		} else if (!brief) {
			print_text(paths[i], &ex[i]);
		}
	}
	if (json) {
		printf("]\n");
	}
	if (brief) {
		print_brief(paths, ex, ok, n);
	}
	cli_free_paths(paths, n);
	free(ex);
	free(ok);
	return status;
}
