/*
 * raid_config.h: the settings of one array, as plain data.
 *
 * One option table (src/config.c) feeds the nbdkit key=value parameters, the
 * config file format (docs/config-file.md) and the help text. A key may be
 * given once, from one source: a key set both on the command line and in a
 * config file, or twice in either, is an error, never a silent override.
 * Members are the exception: `member` repeats, and its order is the role
 * (role 0, 1, 2, ...), but all members come from one source; `spare`
 * repeats too.
 *
 * Every function returns 0 or -errno and reports the reason through the
 * log sink (src/log.h), naming the key and the source.
 */
#ifndef RAID_CONFIG_H
#define RAID_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define RAID_MAX_MEMBERS   64
#define RAID_MAX_SPARES	   8 /* spare= and spares found among member= */
#define RAID_MIN_CHUNK	   (4u << 10)
#define RAID_MAX_CHUNK	   (16u << 20)
#define RAID_DEFAULT_CHUNK (512u << 10)
/* member=missing: a role with no member (raw mode; mdadm's word). */
#define RAID_MEMBER_MISSING_NAME "missing"
/* gather-wait= and gather-grace= by default, microseconds (docs/gather.md). */
#define RAID_GATHER_WAIT_US  20000
#define RAID_GATHER_GRACE_US 200
/* md and the kernel count offsets and sizes in 512-byte sectors. */
#define RAID_SECTOR_BYTES 512u

/* Where the array's geometry comes from (docs/metadata.md). */
enum raid_metadata {
	RAID_META_AUTO = 0, /* md superblocks if the members carry them, else
			       the settings (raw) */
	RAID_META_MD,	    /* md superblocks, required */
	RAID_META_NONE,	    /* the settings only (like mdadm --build) */
};

/* How member I/O is issued (see docs/design.md, "io="). */
enum raid_io_mode {
	RAID_IO_AUTO = 0, /* io_uring, except where it only adds a hop */
	RAID_IO_URING,
	RAID_IO_PSYNC,
};

/* The write-back cache in front of the array (docs/cache.md). */
enum raid_cache_kind {
	RAID_CACHE_NONE = 0, /* every request goes to the members */
	RAID_CACHE_RAM,	     /* dirty data in memory: lost on a crash unless
				flushed, as a RAID card without a battery */
	RAID_CACHE_LOG,	     /* RAM plus a persistent log (cache-log=PATH) */
};
enum raid_cache_mode {
	RAID_CACHE_WRITEBACK = 0, /* acknowledged once cached */
	RAID_CACHE_WRITETHROUGH,  /* acknowledged once on the members */
};
#define RAID_CACHE_DEFAULT_SIZE	     (256ull << 20)
#define RAID_CACHE_DEFAULT_CUTOFF    (4ull << 20)
#define RAID_CACHE_DEFAULT_HOLD_MS   2000u
#define RAID_CACHE_DEFAULT_READAHEAD (8ull << 20)
#define RAID_CACHE_MAX_HOLD_MS	     60000u

/* The parser's own bookkeeping: where each key came from (config.c). */
struct raid_config_sources;

struct raid_config {
	int level;	      /* 0, 1, 5, 10; -1 until set */
	char *layout;	      /* RAID10: n2, f2, o2, ...; NULL = default */
	uint64_t chunk_bytes; /* power of two */
	bool direct;	      /* open members O_DIRECT */
	enum raid_io_mode io;
	uint64_t data_offset; /* raw: where array data starts */
	uint64_t member_size; /* bytes of each member from data_offset; 0 = all
			       */
	bool read_only;	      /* open members O_RDONLY (nbdraid check) */
	enum raid_metadata metadata;
	bool force;	  /* take stale members back (mdadm --force); start a
			     dirty degraded RAID 5 */
	bool degraded_ok; /* start with a role the superblocks count in sync
			     but whose member is not here (mdadm --run) */
	char *control;	  /* control=PATH: the control socket */
	char *event;	  /* event=PROGRAM: run on each event */
	char **faults;	  /* fault=ROLE:RULES, as given (io/fault.h) */
	unsigned nr_faults;
	bool has_uuid; /* uuid= given: select members by it */
	uint8_t uuid[16];
	char *name;	/* name= given: select members by it */
	char **members; /* absolute paths, role order */
	unsigned nr_members;
	char **spares; /* spare=: absolute paths (md superblocks only) */
	unsigned nr_spares;
	enum raid_cache_kind cache; /* cache= */
	enum raid_cache_mode cache_mode;
	uint64_t cache_size;	   /* bytes of cached data at most */
	uint64_t cache_seq_cutoff; /* a sequential run this long bypasses the
				      cache; 0: never */
	unsigned cache_hold_ms;	   /* a partial stripe waits this long for
				      the rest before it is written back */
	uint64_t cache_readahead;  /* a sequential reader's read-ahead
				      window, at most; 0: none */
	char *cache_log;	   /* cache-log=PATH (cache=log) */
	/* Stripe gathering (parity levels): a parked stripe's deadline (0:
	 * no gathering) and the grace for the client's next request, µs. */
	uint64_t gather_wait_us;
	uint64_t gather_grace_us;
	struct raid_config_sources *sources; /* NULL until a key is set */
};

void raid_config_init(struct raid_config *c);
void raid_config_free(struct raid_config *c);

/*
 * Set one key from the command line (or, inside raid_config_load, from the
 * file).  Relative member paths are kept as given on the command line (the
 * plugin makes them absolute first) and taken relative to the config
 * file's folder when read from a file.
 */
int raid_config_set(struct raid_config *c, const char *key, const char *value);

/* Read a config file of `key = value` lines (see docs/config-file.md). */
int raid_config_load(struct raid_config *c, const char *path);

/*
 * Check that the settings can describe an array (after all keys are set).
 * Without superblocks level= is required; raid_open says so when it finds
 * none.
 */
int raid_config_check(const struct raid_config *c);

/* What raw mode needs: a level, enough members, a layout it knows. */
int raid_config_check_raw(const struct raid_config *c);

/* Was key set (from any source)?  A default is not "set". */
bool raid_config_is_set(const struct raid_config *c, const char *key);

/* Parse "64K", "1M", "4096" ...  the forms nbdkit_parse_size accepts. */
int raid_parse_size(const char *str, uint64_t *out);

/* Parse a boolean the way nbdkit_parse_bool does (1/true/yes/on ...). */
int raid_parse_bool(const char *str, bool *out);

/*
 * One line per option (more where its text wraps), from the option table:
 * nbdkit's config_help and `nbdraid --help`.
 */
const char *raid_config_help(void);

#endif
