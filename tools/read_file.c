/* read_file.c - a whole file into memory, for the command-line tools (read_file.h). */
#include "read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fwm__tool_read_file(const char *program, const char *path, uint8_t **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open '%s': %s\n", program, path, strerror(errno));
        return 0;
    }
    size_t capacity = 1 << 16, used = 0;
    uint8_t *buf = malloc(capacity);
    while (buf) {
        if (used == capacity) {
            uint8_t *grown = capacity > SIZE_MAX / 2 ? NULL : realloc(buf, capacity * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            capacity *= 2;
        }
        size_t n = fread(buf + used, 1, capacity - used, f);
        used += n;
        if (n == 0) break;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        fprintf(stderr, "%s: cannot read '%s': %s\n", program, path,
                buf ? "read error" : "out of memory");
        free(buf);
        return 0;
    }
    *data = buf;
    *size = used;
    return 1;
}
