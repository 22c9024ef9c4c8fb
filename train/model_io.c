/* model_io.c - trained parameters to and from model files (see model_io.h). */
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

fwm_status fwm__model_save(const char *path, const fwm_hparams *hp, const float *params,
                           const char *const *tokens, const char *name,
                           const fwm_write_kv *extra, size_t extra_count, fwm_error *err)
{
    fwm__param_layout layout;
    fwm__param_layout_init(&layout, hp);
    fwm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.hp = *hp;
    spec.name = name;
    spec.tokens = tokens;
    for (int k = 0; k < FWM_TENSOR_COUNT; k++)
        spec.tensors[k] = params + layout.offset[k];
    spec.extra = extra;
    spec.extra_count = extra_count;
    /* Every training story begins with the end-of-story token: a served session starts so too. */
    spec.has_prime_tokens = true;
    spec.prime_tokens = &hp->eos_token_id;
    spec.prime_count = 1;
    return fwm_model_write(path, &spec, err);
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
    if (model->arch == FWM_ARCH_FWM)
        return fwm__model_save(path, &model->fwm, params, tokens, name, extra, extra_count, err);
    if (model->arch == FWM_ARCH_MNM) {
        fwm_mnm_write_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.hp = model->mnm;
        spec.name = name;
        spec.tokens = tokens;
        for (size_t k = 0; k < layout.count; k++)
            spec.tensors[k] = params + layout.offset[k];
        spec.extra = extra;
        spec.extra_count = extra_count;
        spec.has_prime_tokens = true;
        spec.prime_tokens = &model->mnm.eos_token_id;
        spec.prime_count = 1;
        return fwm_mnm_model_write(path, &spec, err);
    }
    if (model->arch == FWM_ARCH_GFW) {
        fwm_gfw_write_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.hp = model->gfw;
        spec.name = name;
        spec.tokens = tokens;
        for (size_t k = 0; k < layout.count; k++)
            spec.tensors[k] = params + layout.offset[k];
        spec.extra = extra;
        spec.extra_count = extra_count;
        spec.has_prime_tokens = true;
        spec.prime_tokens = &model->gfw.eos_token_id;
        spec.prime_count = 1;
        return fwm_gfw_model_write(path, &spec, err);
    }
    if (model->arch == FWM_ARCH_STM) {
        fwm_stm_write_spec spec;
        memset(&spec, 0, sizeof spec);
        spec.hp = model->stm;
        spec.name = name;
        spec.tokens = tokens;
        for (size_t k = 0; k < layout.count; k++)
            spec.tensors[k] = params + layout.offset[k];
        spec.extra = extra;
        spec.extra_count = extra_count;
        spec.has_prime_tokens = true;
        spec.prime_tokens = &model->stm.eos_token_id;
        spec.prime_count = 1;
        return fwm_stm_model_write(path, &spec, err);
    }
    if (model->arch != FWM_ARCH_LSTM)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "model %s: unknown architecture %d",
                          path, (int)model->arch);
    fwm_lstm_write_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.hp = model->lstm;
    spec.name = name;
    spec.tokens = tokens;
    for (size_t k = 0; k < layout.count; k++)
        spec.tensors[k] = params + layout.offset[k];
    spec.extra = extra;
    spec.extra_count = extra_count;
    spec.has_prime_tokens = true;
    spec.prime_tokens = &model->lstm.eos_token_id;
    spec.prime_count = 1;
    return fwm_lstm_model_write(path, &spec, err);
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
    fwm_schema schema;
    memset(&schema, 0, sizeof schema);
    fwm_lstm_schema lstm_schema;
    memset(&lstm_schema, 0, sizeof lstm_schema);
    fwm_mnm_schema mnm_schema;
    memset(&mnm_schema, 0, sizeof mnm_schema);
    fwm_gfw_schema gfw_schema;
    memset(&gfw_schema, 0, sizeof gfw_schema);
    fwm_stm_schema stm_schema;
    memset(&stm_schema, 0, sizeof stm_schema);
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
    if (arch == FWM_ARCH_LSTM) {
        status = fwm_lstm_schema_parse(buf, (size_t)size, &lstm_schema, err);
        if (status != FWM_OK)
            goto done;
        out->spec.arch = FWM_ARCH_LSTM;
        out->spec.lstm = lstm_schema.hp;
        tokens = lstm_schema.tokens;
    } else if (arch == FWM_ARCH_MNM) {
        status = fwm_mnm_schema_parse(buf, (size_t)size, &mnm_schema, err);
        if (status != FWM_OK)
            goto done;
        out->spec.arch = FWM_ARCH_MNM;
        out->spec.mnm = mnm_schema.hp;
        tokens = mnm_schema.tokens;
    } else if (arch == FWM_ARCH_GFW) {
        status = fwm_gfw_schema_parse(buf, (size_t)size, &gfw_schema, err);
        if (status != FWM_OK)
            goto done;
        out->spec.arch = FWM_ARCH_GFW;
        out->spec.gfw = gfw_schema.hp;
        tokens = gfw_schema.tokens;
    } else if (arch == FWM_ARCH_STM) {
        status = fwm_stm_schema_parse(buf, (size_t)size, &stm_schema, err);
        if (status != FWM_OK)
            goto done;
        out->spec.arch = FWM_ARCH_STM;
        out->spec.stm = stm_schema.hp;
        tokens = stm_schema.tokens;
    } else if (arch == FWM_ARCH_FWM) {
        status = fwm_schema_parse(buf, (size_t)size, &schema, err);
        if (status != FWM_OK)
            goto done;
        out->spec.arch = FWM_ARCH_FWM;
        out->spec.fwm = schema.hp;
        tokens = schema.tokens;
    } else {
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
        const fwm_schema_tensor *t = arch == FWM_ARCH_LSTM   ? &lstm_schema.tensors[k]
                                     : arch == FWM_ARCH_MNM ? &mnm_schema.tensors[k]
                                     : arch == FWM_ARCH_GFW ? &gfw_schema.tensors[k]
                                     : arch == FWM_ARCH_STM ? &stm_schema.tensors[k]
                                                             : &schema.tensors[k];
        status = copy_tensor(path, &out->layout, k, t, out->params, err);
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
    fwm_schema_release(&schema);
    fwm_lstm_schema_release(&lstm_schema);
    fwm_mnm_schema_release(&mnm_schema);
    fwm_gfw_schema_release(&gfw_schema);
    fwm_stm_schema_release(&stm_schema);
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
