/* read_file.h - a whole file into memory, for the command-line tools (fwm-inspect, fwm-convert). */
#ifndef FWM_TOOLS_READ_FILE_H
#define FWM_TOOLS_READ_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Reads the whole of `path` into a malloc'ed buffer (*data, *size; the caller frees it). On failure
 * prints "PROGRAM: cannot open 'PATH': REASON" or "PROGRAM: cannot read 'PATH': REASON" on stderr
 * and returns 0; 1 on success. */
int fwm__tool_read_file(const char *program, const char *path, uint8_t **data, size_t *size);

#endif
