/* whole_file.c - a whole file into memory (see whole_file.h). */
#include "whole_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"

fwm_status fwm__read_whole_file(const char *path, char **out, size_t *length, fwm_error *err)
{
    *out = NULL;
    *length = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fwm__error(err, FWM_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        }
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return fwm__error(err, FWM_ERR_IO, "cannot read %s", path);
    }
    buf[n] = 0;
    *out = buf;
    *length = n;
    return FWM_OK;
}
