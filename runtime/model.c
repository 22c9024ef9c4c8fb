/* model.c - loading a model file into a ready-to-step fwm_model, for every architecture: map or read
 * the file, find its architecture (model_format/arch_list.h) and let its ops load it (arch_ops.h;
 * the FWM's is runtime/fwm/fwm_model.c), with what they share here (tensors bound in place or
 * widened once, checksum and fingerprint checks); then build the vocabulary index and the start
 * state. Also the model's read-only queries (info, token text and lookup). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch_ops.h"
#include "bf16_kernels.h"
#include "fwm_alloc.h"
#include "fwm_error.h"
#include "model_internal.h"
#include "schema_common.h"
#include "session_internal.h"
#include "vocab_index.h"

fwm_model_params fwm_model_default_params(void) {
    fwm_model_params params = {.use_mmap = true, .verify_checksum = true};
    return params;
}

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            int shift = 0;
            while (!(mantissa & 0x400u)) {
                mantissa <<= 1;
                shift++;
            }
            mantissa &= 0x3ffu;
            bits = sign | ((uint32_t)(127 - 15 + 1 - shift) << 23) | (mantissa << 13);
        }
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float bfloat_to_float(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* An F32 tensor whose data is 4-byte aligned can be read in place; anything else is widened. */
static bool usable_in_place(const fwm_schema_tensor *t) {
    return t->type == FWM_GGML_TYPE_F32 && ((uintptr_t)t->data % sizeof(float)) == 0;
}

static void widen(const fwm_schema_tensor *t, float *dst) {
    uint64_t n = t->rows * t->cols;
    const unsigned char *src = t->data;
    for (uint64_t i = 0; i < n; i++) {
        if (t->type == FWM_GGML_TYPE_F32) {
            memcpy(&dst[i], src + 4 * i, 4);
        } else {
            uint16_t v = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
            dst[i] = t->type == FWM_GGML_TYPE_F16 ? half_to_float(v) : bfloat_to_float(v);
        }
    }
}

/* Whether tensor i stays BF16 (fwm__bind_tensors_bf16). */
static bool stays_bf16(const fwm_schema_tensor *t, bool bf16, const bool *multiplied, size_t i) {
    return bf16 && multiplied && multiplied[i] && t->type == FWM_GGML_TYPE_BF16 &&
           t->cols <= FWM_BF16_MAX_COLS;
}

fwm_status fwm__bind_tensors_bf16(struct fwm_model *model, const fwm_schema_tensor *tensors,
                                  size_t n, bool bf16, const bool *multiplied,
                                  const float **pointers, const uint16_t **pointers16,
                                  fwm_error *err) {
    uint64_t converted_floats = 0, copied_halves = 0;
    for (size_t i = 0; i < n; i++) {
        const fwm_schema_tensor *t = &tensors[i];
        if (stays_bf16(t, bf16, multiplied, i)) {
            if ((uintptr_t)t->data % sizeof(uint16_t) != 0) copied_halves += t->rows * t->cols;
        } else if (!usable_in_place(t)) {
            converted_floats += t->rows * t->cols;
        }
    }
    if (copied_halves > 0) {
        if (copied_halves > SIZE_MAX / sizeof(uint16_t))
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "cannot copy %" PRIu64 " BF16 weights",
                              copied_halves);
        model->converted16 = fwm__aligned_alloc(64, (size_t)copied_halves * sizeof(uint16_t));
        if (!model->converted16)
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                              "out of memory copying %" PRIu64 " BF16 weights", copied_halves);
    }
    if (converted_floats > 0) {
        if (converted_floats > SIZE_MAX / sizeof(float))
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "cannot widen %" PRIu64 " weights",
                              converted_floats);
        model->converted = fwm__aligned_alloc(64, (size_t)converted_floats * sizeof(float));
        if (!model->converted)
            return fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                              "out of memory widening %" PRIu64 " weights to F32", converted_floats);
    }
    float *next = model->converted;
    uint16_t *next16 = model->converted16;
    for (size_t i = 0; i < n; i++) {
        const fwm_schema_tensor *t = &tensors[i];
        if (pointers16) pointers16[i] = NULL;
        if (stays_bf16(t, bf16, multiplied, i)) {
            pointers[i] = NULL;
            model->bf16_tensors++;
            if ((uintptr_t)t->data % sizeof(uint16_t) == 0) {
                pointers16[i] = t->data;
            } else {
                memcpy(next16, t->data, (size_t)(t->rows * t->cols) * sizeof(uint16_t));
                pointers16[i] = next16;
                next16 += t->rows * t->cols;
            }
        } else if (usable_in_place(t)) {
            pointers[i] = t->data;
        } else {
            widen(t, next);
            pointers[i] = next;
            next += t->rows * t->cols;
        }
    }
    return FWM_OK;
}

fwm_status fwm__bind_tensors(struct fwm_model *model, const fwm_schema_tensor *tensors, size_t n,
                             const float **pointers, fwm_error *err) {
    return fwm__bind_tensors_bf16(model, tensors, n, false, NULL, pointers, NULL, err);
}

fwm_status fwm__check_integrity(struct fwm_model *model, const fwm__schema_head *head,
                                uint64_t checksum, uint64_t computed,
                                const fwm_model_params *params, fwm_error *err) {
    model->has_checksum = head->has_checksum;
    if (head->has_checksum && params->verify_checksum) {
        if (checksum != head->checksum)
            return fwm__error(err, FWM_ERR_CHECKSUM,
                              "tensor data checksum mismatch: key '" FWM_KEY_CHECKSUM
                              "' says 0x%016" PRIx64 ", the data hashes to 0x%016" PRIx64,
                              head->checksum, checksum);
        model->checksum_verified = true;
    }
    model->fingerprint = computed;
    if (head->has_fingerprint && params->verify_checksum && head->fingerprint != computed)
        return fwm__error(err, FWM_ERR_CHECKSUM,
                          "model fingerprint mismatch: key '" FWM_KEY_FINGERPRINT
                          "' says 0x%016" PRIx64 ", the model computes to 0x%016" PRIx64,
                          head->fingerprint, computed);
    return FWM_OK;
}

/* Build a model over buf[0..size), which the caller keeps alive (mapping or copy owned by model). */
/* The primed start state: a zero session that has read the prime tokens, and the scores after the
 * last one (the read and the output change no state, so only the last step computes them). */
fwm_status fwm__model_build_start(struct fwm_model *model, fwm_error *err) {
    fwm_session_free(model->start);
    fwm__free(model->start_logits);
    model->start = NULL;
    model->start_logits = NULL;
    fwm_status status = fwm_session_create(model, &model->start, err);
    if (status != FWM_OK || model->prime_count == 0) return status;
    model->start_logits = fwm__malloc((size_t)model->hp.vocab_size * sizeof(float));
    if (!model->start_logits)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory for the start state's scores");
    uint32_t n = model->prime_count;
    status = fwm_session_step_sequence(model->start, model->prime_tokens, n - 1, NULL, err);
    if (status != FWM_OK) return status;
    return fwm_session_step(model->start, model->prime_tokens[n - 1], model->start_logits, err);
}

void fwm__model_take_strings(struct fwm_model *model, fwm__schema_head *head) {
    model->tokens = head->tokens;
    model->token_lengths = head->token_lengths;
    model->name = head->name;
    head->tokens = NULL;
    head->token_lengths = NULL;
    head->name = NULL;
    model->prime_count = head->prime_count;
    memcpy(model->prime_tokens, head->prime_tokens, sizeof model->prime_tokens);
}

/* The tokenizer keys every architecture shares (its schema has checked them). */
static fwm_status read_tokenizer(struct fwm_model *model, const void *buf, size_t size,
                                 fwm_error *err) {
    fwm_gguf_file f;
    fwm_status status = fwm__gguf_parse(buf, size, &f, err);
    if (status != FWM_OK) return status;
    uint32_t unknown = FWM_NO_TOKEN;
    status = fwm__schema_read_tokenizer(&f, model->hp.vocab_size, &model->text_tokenizer, &unknown,
                                        err);
    fwm__gguf_release(&f);
    model->has_unknown_token = unknown != FWM_NO_TOKEN;
    model->unknown_token_id = unknown;
    return status;
}

static fwm_status build_model(struct fwm_model *model, const void *buf, size_t size,
                              const fwm_model_params *params, fwm_error *err) {
    fwm_arch arch;
    fwm_status status = fwm__arch_detect(buf, size, &arch, err);
    if (status != FWM_OK) return status;
    model->arch = arch;
    status = fwm__arch_ops(arch)->load(model, buf, size, params, err);
    if (status != FWM_OK) return status;
    status = read_tokenizer(model, buf, size, err);
    if (status != FWM_OK) return status;
    status = fwm__vocab_index_build(model, err);
    if (status != FWM_OK) return status;
    return fwm__model_build_start(model, err);
}

static struct fwm_model *model_new(fwm_error *err) {
    struct fwm_model *model = fwm__calloc(1, sizeof *model);
    if (!model) fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory allocating a model");
    return model;
}

fwm_status fwm_model_load_from_buffer(const void *data, size_t size, const fwm_model_params *params,
                                      fwm_model **out, fwm_error *err) {
    fwm__error_clear(err);
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_model_load_from_buffer: out is NULL");
    *out = NULL;
    if (!data && size > 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_model_load_from_buffer: data is NULL");
    fwm_model_params defaults = fwm_model_default_params();
    if (!params) params = &defaults;
    struct fwm_model *model = model_new(err);
    if (!model) return FWM_ERR_OUT_OF_MEMORY;
    fwm_status status = build_model(model, data ? data : "", size, params, err);
    if (status != FWM_OK) {
        fwm_model_free(model);
        return status;
    }
    *out = model;
    return FWM_OK;
}

/* Read a whole file into a 64-byte aligned buffer. */
static fwm_status read_file(int fd, const char *path, size_t size, void **out, fwm_error *err) {
    unsigned char *buf = fwm__aligned_alloc(64, size ? size : 1);
    if (!buf)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "out of memory reading '%s' (%zu bytes)", path,
                          size);
    size_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, buf + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            fwm__free(buf);
            return fwm__error(err, FWM_ERR_IO, "cannot read '%s': %s", path,
                              n < 0 ? strerror(errno) : "file shrank while reading");
        }
        done += (size_t)n;
    }
    *out = buf;
    return FWM_OK;
}

fwm_status fwm_model_load(const char *path, const fwm_model_params *params, fwm_model **out,
                          fwm_error *err) {
    fwm__error_clear(err);
    if (!out) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_model_load: out is NULL");
    *out = NULL;
    if (!path) return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "fwm_model_load: path is NULL");
    fwm_model_params defaults = fwm_model_default_params();
    if (!params) params = &defaults;

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fwm__error(err, FWM_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fwm__error(err, FWM_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fwm__error(err, FWM_ERR_IO, "'%s' is not a regular file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return fwm__error(err, FWM_ERR_IO, "'%s' is too large to load", path);
    }
    size_t size = (size_t)st.st_size;

    struct fwm_model *model = model_new(err);
    if (!model) {
        close(fd);
        return FWM_ERR_OUT_OF_MEMORY;
    }
    fwm_status status = FWM_OK;
    const void *buf = NULL;
    if (params->use_mmap && size > 0) {
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            status = fwm__error(err, FWM_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
        } else {
            model->mapping = map;
            model->mapping_size = size;
            buf = map;
        }
    } else {
        status = read_file(fd, path, size, &model->file_copy, err);
        buf = model->file_copy;
    }
    close(fd);
    if (status == FWM_OK) status = build_model(model, buf ? buf : "", size, params, err);
    if (status != FWM_OK) {
        fwm_model_free(model);
        return status;
    }
    *out = model;
    return FWM_OK;
}

void fwm_model_free(fwm_model *model) {
    if (!model) return;
    fwm_session_free(model->start);
    fwm__free(model->start_logits);
    fwm__arch_ops(model->arch)->unload(model);
    if (model->tokens) {
        for (uint32_t i = 0; i < model->hp.vocab_size; i++) fwm__free(model->tokens[i]);
        fwm__free(model->tokens);
    }
    fwm__free(model->token_lengths);
    fwm__free(model->vocab_index);
    fwm__free(model->name);
    fwm__free(model->converted);
    fwm__free(model->converted16);
    fwm__free(model->file_copy);
    if (model->mapping) munmap(model->mapping, model->mapping_size);
    fwm__free(model);
}

void fwm_model_get_info(const fwm_model *model, fwm_model_info *info) {
    if (!info) return;
    memset(info, 0, sizeof *info);
    if (!model) return;
    const fwm__arch_ops_table *ops = fwm__arch_ops(model->arch);
    const fwm_hparams *hp = &model->hp;
    info->architecture = ops->name;
    info->vocab_size = hp->vocab_size;
    info->embedding_length = hp->embedding_length;
    info->hidden_size = hp->hidden_size;
    info->residual = hp->residual;
    info->forget_bias = hp->forget_bias;
    info->padding_token_id = hp->padding_token_id;
    info->eos_token_id = hp->eos_token_id;
    info->parameter_count = model->parameter_count;
    info->session_state_floats = ops->state_floats(model);
    info->session_state_bytes = fwm__session_bytes(model);
    info->state_blob_bytes = fwm__state_blob_size(model);
    info->fingerprint = model->fingerprint;
    info->has_checksum = model->has_checksum;
    info->checksum_verified = model->checksum_verified;
    info->name = model->name ? model->name : "";
    info->prime_token_count = model->prime_count;
    info->prime_tokens = model->prime_tokens;
    info->predicts_every_token = true;
    info->tokenizer = model->text_tokenizer ? "text" : "word";
    info->unknown_token_id = model->has_unknown_token ? model->unknown_token_id : FWM_NO_TOKEN;
    ops->fill_info(model, info);
}

const float *fwm_model_start_logits(const fwm_model *model) {
    if (!model || (model->start && !fwm_session_has_prediction(model->start))) return NULL;
    return model->start_logits;
}

const char *fwm_model_token_text(const fwm_model *model, uint32_t id) {
    if (!model || id >= model->hp.vocab_size) return NULL;
    return model->tokens[id];
}
