/*
 * cli.h: what the nbdraid CLI's commands share (main.c).  Each command
 * prints "nbdraid: COMMAND: message" on errors and returns its exit
 * status: 0 done, 1 refused or failed, 2 a check that found mismatches.
 */
#ifndef NBDRAID_CLI_H
#define NBDRAID_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "raid.h"

/* The commands that take their own arguments. */
int cmd_create(int argc, char **argv);
int cmd_examine(int argc, char **argv);
int cmd_examine_log(int argc, char **argv);
/* nbdraid --control PATH COMMAND ...: argv[0] is the command. */
int cmd_control(const char *path, int argc, char **argv);

/* Print "nbdraid: COMMAND: message" on stderr; returns 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A UUID as mdadm prints it: 4:4:4:4 bytes in hex (buf: 36 bytes). */
void cli_uuid(const uint8_t *uuid, char *buf);

/* A time in seconds since the epoch, local, as mdadm prints one. */
const char *cli_time(uint64_t seconds, char *buf, size_t len);

/* Print s as a JSON string: quotes, backslashes and controls escaped. */
void cli_json_str(const char *s);

/* "15.00 MiB 15.73 MB", as mdadm puts sizes in brackets. */
const char *cli_human(uint64_t bytes, char *buf, size_t len);

/* Absolute copies of paths (realpath where it resolves), or NULL. */
char **cli_absolute_paths(char *const *paths, unsigned n);
void cli_free_paths(char **paths, unsigned n);

#endif
