/* model_io.c - trained parameters to and from model files (see model_io.h): the writer and the
 * reader each have one case, written over FWM_ARCH_LIST. */
#include "model_io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "gfw/gfw_schema.h"
#include "lstm/lstm_schema.h"
#include "mnm/mnm_schema.h"
#include "stm/stm_schema.h"

/* The FWM's format names carry no prefix (fwm_write_spec, fwm__model_write, fwm_schema, ...);
 * under these the writer and reader below name every architecture of FWM_ARCH_LIST alike,
 * fwm_<prefix>_write_spec and so on. */
#define fwm_fwm_write_spec fwm_write_spec
#define fwm__fwm_model_write fwm__model_write
#define fwm_fwm_schema fwm_schema
#define fwm__fwm_schema_parse fwm__schema_parse
#define fwm__fwm_schema_release fwm__schema_release

/* The model file of `model` with params flat in `layout`: its architecture's write spec, filled
 * alike for all (the session starts with <eos>: every training story begins with it). */
static fwm_status write_model(const char *path, const fwm__model_spec *model,
                              const fwm__tensor_layout *layout, const float *params,
                              const char *const *tokens, const char *name,
                              const fwm_write_kv *extra, size_t extra_count, fwm_error *err)
{
    switch (model->arch) {
#define FWM_WRITE_CASE_(id, str, prefix)                                                           \
    case FWM_ARCH_##id: {                                                                          \
        fwm_##prefix##_write_spec spec;                                                            \
        memset(&spec, 0, sizeof spec);                                                             \
        spec.hp = model->prefix;                                                                   \
        spec.head.name = name;                                                                      \
        spec.head.tokens = tokens;                                                                  \
        for (size_t k = 0; k < layout->count; k++)                                                 \
            spec.tensors[k] = params + layout->offset[k];                                          \
        spec.head.extra = extra;                                                                    \
        spec.head.extra_count = extra_count;                                                        \
        spec.head.has_prime_tokens = true;                                                          \
        spec.head.prime_tokens = &model->prefix.eos_token_id;                                       \
        spec.head.prime_count = 1;                                                                  \
        return fwm__##prefix##_model_write(path, &spec, err);                                       \
    }
        FWM_ARCH_LIST(FWM_WRITE_CASE_)
#undef FWM_WRITE_CASE_
    default:
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "model %s: unknown architecture %d",
                          path, (int)model->arch);
    }
}

fwm_status fwm__model_save(const char *path, const fwm_hparams *hp, const float *params,
                           const char *const *tokens, const char *name,
                           const fwm_write_kv *extra, size_t extra_count, fwm_error *err)
{
    fwm__model_spec model;
    memset(&model, 0, sizeof model);
    model.arch = FWM_ARCH_FWM;
    model.fwm = *hp;
    fwm__tensor_layout layout; /* the FWM's fwm__param_layout offsets */
    fwm__tensor_layout_init(&layout, &model);
    return write_model(path, &model, &layout, params, tokens, name, extra, extra_count, err);
}

fwm_status fwm__model_save_spec(const char *path, const fwm__model_spec *model,
                                const float *params, const char *const *tokens, const char *name,
                                const fwm_write_kv *extra, size_t extra_count, fwm_error *err)
{
    fwm__tensor_layout layout;
    fwm__tensor_layout_init(&layout, model);
    for (size_t k = 0; k < layout.count; k++) /* never a model with weights that are not finite */
        for (size_t i = 0; i < layout.size[k]; i++)
            if (!isfinite(params[layout.offset[k] + i]))
                return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                                  "not writing model %s: tensor %s holds a value that is not "
                                  "finite (entry %zu)",
                                  path, layout.names[k], i);
    return write_model(path, model, &layout, params, tokens, name, extra, extra_count, err);
}

/* An IEEE half or a bfloat16 as float (both exact). */
static float half_to_float(uint16_t h)
{
    int exponent = (h >> 10) & 31, mantissa = h & 1023;
    float v = exponent == 0    ? ldexpf((float)mantissa, -24)
              : exponent == 31 ? (mantissa ? NAN : INFINITY)
                               : ldexpf((float)(mantissa + 1024), exponent - 25);
    return h & 0x8000u ? -v : v;
}

static float bfloat_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Tensor k's data (F32, F16 or BF16, little-endian) as F32 into params. */
static fwm_status copy_tensor(const char *path, const fwm__tensor_layout *layout, size_t k,
                              const fwm_schema_tensor *t, float *params, fwm_error *err)
{
    float *dst = params + layout->offset[k];
    const unsigned char *src = t->data;
    size_t n = layout->size[k];
    if (t->type == FWM_GGML_TYPE_F32) {
        memcpy(dst, src, n * sizeof(float));
        return FWM_OK;
    }
    if (t->type != FWM_GGML_TYPE_F16 && t->type != FWM_GGML_TYPE_BF16)
        return fwm__error(err, FWM_ERR_UNSUPPORTED,
                          "model %s: tensor '%s' has GGML type %u; the trainer reads F32, F16 and "
                          "BF16 tensors",
                          path, layout->names[k], t->type);
    for (size_t i = 0; i < n; i++) {
        uint16_t v = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
        dst[i] = t->type == FWM_GGML_TYPE_F16 ? half_to_float(v) : bfloat_to_float(v);
    }
    return FWM_OK;
}

fwm_status fwm__model_read(const char *path, fwm__loaded_model *out, fwm_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return fwm__error(err, FWM_ERR_IO, "cannot open model %s: %s", path, strerror(errno));
    fwm_status status = FWM_OK;
    /* every architecture's schema (released at the end whichever the file's) */
#define FWM_SCHEMA_DECLARE_(id, str, prefix)                                                       \
    fwm_##prefix##_schema schema_##prefix;                                                         \
    memset(&schema_##prefix, 0, sizeof schema_##prefix);
    FWM_ARCH_LIST(FWM_SCHEMA_DECLARE_)
#undef FWM_SCHEMA_DECLARE_
    char *buf = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (size <= 0 || fseek(f, 0, SEEK_SET) != 0) {
        status = fwm__error(err, FWM_ERR_IO, "cannot read model %s", path);
        goto done;
    }
    buf = malloc((size_t)size);
    if (!buf) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "model %s: out of memory", path);
        goto done;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        status = fwm__error(err, FWM_ERR_IO, "cannot read model %s", path);
        goto done;
    }
    fwm_arch arch;
    status = fwm__arch_detect(buf, (size_t)size, &arch, err);
    if (status != FWM_OK)
        goto done;
    char *const *tokens = NULL;
    const fwm_schema_tensor *tensors = NULL;
    switch (arch) {
#define FWM_SCHEMA_PARSE_(id, str, prefix)                                                         \
    case FWM_ARCH_##id:                                                                            \
        status = fwm__##prefix##_schema_parse(buf, (size_t)size, &schema_##prefix, err);            \
        if (status != FWM_OK)                                                                      \
            goto done;                                                                             \
        out->spec.arch = FWM_ARCH_##id;                                                            \
        out->spec.prefix = schema_##prefix.hp;                                                     \
        tokens = schema_##prefix.head.tokens;                                                      \
        tensors = schema_##prefix.tensors;                                                         \
        break;
        FWM_ARCH_LIST(FWM_SCHEMA_PARSE_)
#undef FWM_SCHEMA_PARSE_
    default:
        status = fwm__error(err, FWM_ERR_UNSUPPORTED,
                            "model %s: the trainer does not handle architecture %s", path,
                            fwm__arch_name(arch));
        goto done;
    }
    fwm__tensor_layout_init(&out->layout, &out->spec);
    out->params = calloc(out->layout.total, sizeof(float));
    if (!out->params) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "model %s: out of memory", path);
        goto done;
    }
    for (size_t k = 0; k < out->layout.count; k++) {
        status = copy_tensor(path, &out->layout, k, &tensors[k], out->params, err);
        if (status != FWM_OK)
            goto done;
    }
    uint32_t V = fwm__spec_vocab_size(&out->spec);
    for (uint32_t i = 0; i < V; i++)
        if (fwm__train_vocab_add(&out->vocab, tokens[i]) != i) {
            status = fwm__error(err, FWM_ERR_FORMAT, "model %s: token %u '%s' repeats an earlier one",
                                path, i, tokens[i]);
            goto done;
        }
done:
    if (status != FWM_OK)
        fwm__loaded_model_release(out);
#define FWM_SCHEMA_RELEASE_(id, str, prefix) fwm__##prefix##_schema_release(&schema_##prefix);
    FWM_ARCH_LIST(FWM_SCHEMA_RELEASE_)
#undef FWM_SCHEMA_RELEASE_
    free(buf);
    fclose(f);
    return status;
}

void fwm__loaded_model_release(fwm__loaded_model *model)
{
    if (!model)
        return;
    free(model->params);
    fwm__train_vocab_release(&model->vocab);
    memset(model, 0, sizeof *model);
}
