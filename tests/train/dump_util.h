/* dump_util.h - what the trainer's per-architecture dump programs (stm_dump.c, gfw_dump.c,
 * mnm_grads_dump.c: a model's numbers for the PyTorch comparisons) share: the comma-separated id
 * lists of their arguments, the float64 parameter file they read and the float64 arrays and
 * gradients they write. Each keeps only its architecture's sizes, calls and outputs.
 * Header only (static inline functions). */
#ifndef FWM_TESTS_TRAIN_DUMP_UTIL_H
#define FWM_TESTS_TRAIN_DUMP_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "param_layout.h"

/* The ids of "3,1,4" into *out (malloc'd, the caller frees); their count, -1 out of memory. */
static inline int du_parse_ids(const char *text, uint32_t **out)
{
    int n = 0;
    uint32_t *ids = malloc((strlen(text) + 1) * sizeof *ids);
    if (!ids)
        return -1;
    const char *p = text;
    while (*p) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p)
            break;
        ids[n++] = (uint32_t)v;
        p = *end == ',' ? end + 1 : end;
    }
    *out = ids;
    return n;
}

/* v[0..n) as raw float64 into a new file at path; 1 when all was written. */
static inline int du_write_doubles(const char *path, const double *v, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(v, sizeof *v, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok;
}

/* The tensors of `layout`, in order, from a file of row-major float64 without gaps into the flat
 * buffer params (the gaps untouched); 1 when every tensor was read. */
static inline int du_read_tensors(const char *path, double *params,
                                  const fwm__tensor_layout *layout)
{
    FILE *f = fopen(path, "rb");
    int ok = f != NULL;
    for (size_t k = 0; ok && k < layout->count; k++)
        ok = fread(params + layout->offset[k], sizeof(double), layout->size[k], f) ==
             layout->size[k];
    if (f)
        fclose(f);
    return ok;
}

/* The reverse: the tensors of the flat buffer data (gradients) into a new file at path, in the
 * same layout as du_read_tensors reads; 1 when all was written. */
static inline int du_write_tensors(const char *path, const double *data,
                                   const fwm__tensor_layout *layout)
{
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;
    for (size_t k = 0; ok && k < layout->count; k++)
        ok = fwrite(data + layout->offset[k], sizeof(double), layout->size[k], f) ==
             layout->size[k];
    if (f && fclose(f) != 0)
        ok = 0;
    return ok;
}

#endif
