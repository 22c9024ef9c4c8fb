/* checkpoint.c - save and restore everything a training run's next step depends on.
 *
 * File layout (native byte order; a checkpoint is for resuming on the same kind of machine, not
 * for distribution, which is what model files are for), version 6:
 *   "FWMTRCK1", u32 version, u32 sizeof(model block), the model block: u32 architecture
 *   (fwm_arch), fwm_hparams (zero unless fwm), fwm_lstm_hparams (zero unless lstm), f32 dropout
 *   token, embedding, recurrent, layer (lstm and fwm), fwm_mnm_hparams (zero unless mnm), f64 meta
 *   weight (zero unless mnm), fwm_gfw_hparams (zero unless gfw), fwm_stm_hparams and u32
 *   fix-alpha and train-output flags (zero unless stm), u32 tied embeddings (lstm and fwm);
 *   i32 mode, lanes, window, segment, u32 qmark, u64 seed, u64 training-data hash,
 *   i64 step, epoch, window_index, tokens, f64 seconds, the running metrics, f64 running loss,
 *   i64 running steps, u64 n, f32 params[n], adam m[n], adam v[n], u64 k, f32 lane state[k],
 *   u64 FNV-1a hash of every byte before it.
 * Each field has its natural alignment counted from the file's start (zero bytes fill the gaps),
 * as the header's C struct had it. The model arrays are the architecture's flat layout
 * (fwm__tensor_layout) and its lane state. Version 5 (before --tie-embeddings) has the model
 * block without the tied-embeddings flag. fwm_hparams.block_count (the stacked FWM's layer
 * count) sits in what was padding after `residual`: written as 1 or more, and read as 1 where a
 * checkpoint from before it holds 0 there. Older versions still load (the table `versions`):
 * version 4 (before the STM) has the model block without the STM part; version 3 (before the gfw
 * model), without the gfw part either; version 2 (before
 * the MNM), without the MNM's part either; and version 1 (before there were architectures) has
 * fwm_hparams in place of the model block, an FWM without dropout. A trainer never writes a
 * checkpoint whose parameters, Adam moments or lane state are not all finite (the write fails,
 * naming the tensor). The epoch's sample order is not stored: it is a function of (seed, epoch),
 * and neither are the dropout masks: functions of (seed, step, lane). Written to a temporary file
 * and renamed, so a crash never leaves a half-written checkpoint.
 * Under mpirun (distributed.h) rank 0 gathers every lane's state and writes the file, or reads it
 * and sends what it holds to the other ranks; the file is the same whatever the number of ranks.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "trainer.h"

#define CHECKPOINT_MAGIC "FWMTRCK1"
#define CHECKPOINT_VERSION 6u

typedef struct hashed_file {
    FILE *f;
    uint64_t hash;
    int failed;
} hashed_file;

static void hash_bytes(uint64_t *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t x = *h;
    for (size_t i = 0; i < n; i++)
        x = (x ^ p[i]) * 1099511628211ull;
    *h = x;
}

static void put(hashed_file *hf, const void *data, size_t n)
{
    if (hf->failed)
        return;
    if (fwrite(data, 1, n, hf->f) != n)
        hf->failed = 1;
    hash_bytes(&hf->hash, data, n);
}

static int get(hashed_file *hf, void *data, size_t n)
{
    if (hf->failed || fread(data, 1, n, hf->f) != n) {
        hf->failed = 1;
        return -1;
    }
    hash_bytes(&hf->hash, data, n);
    return 0;
}

/* What is trained (version 6). Any padding (before meta_weight, inside fwm_stm_hparams) is zero: a
 * header is cleared before it is filled. */
typedef struct checkpoint_model {
    uint32_t arch;
    fwm_hparams fwm;
    fwm_lstm_hparams lstm;
    fwm__dropout dropout;
    fwm_mnm_hparams mnm;
    double meta_weight;
    fwm_gfw_hparams gfw;
    fwm_stm_hparams stm;
    uint32_t stm_fix_alpha, stm_train_output;
    uint32_t tie_embeddings; /* version 6 on */
} checkpoint_model;

/* Version 4's block ended after the gfw part, its size a multiple of 8 (the block's alignment, for
 * meta_weight); the bytes up to there are zero padding in its files. */
#define V4_BLOCK_BYTES ((offsetof(checkpoint_model, gfw) + sizeof(fwm_gfw_hparams) + 7) / 8 * 8)
_Static_assert(V4_BLOCK_BYTES <= offsetof(checkpoint_model, stm) + sizeof(fwm_stm_hparams),
               "the version-4 block reads into the version-5 one");

/* Version 5's block ended after the STM's flags, its size a multiple of 8 (the block's
 * alignment). */
#define V5_BLOCK_BYTES ((offsetof(checkpoint_model, stm_train_output) + 4 + 7) / 8 * 8)

/* The model block of each version: the version-5 block's first block_bytes (so the parts a
 * version lacks read as zero), or for version 1 the FWM's hyperparameters alone (`bare`: no
 * architecture field, no dropout). Saving writes the last row. */
static const struct checkpoint_version {
    uint32_t version;
    size_t block_bytes;
    int bare;
} versions[] = {
    {1, sizeof(fwm_hparams), 1},               /* before there were architectures */
    {2, offsetof(checkpoint_model, mnm), 0},   /* the FWM and the LSTM, before the MNM */
    {3, offsetof(checkpoint_model, gfw), 0},   /* and the MNM, before the gfw model */
    {4, V4_BLOCK_BYTES, 0},                    /* and the gfw model, before the STM */
    {5, V5_BLOCK_BYTES, 0},                    /* and the STM, before --tie-embeddings */
    {CHECKPOINT_VERSION, sizeof(checkpoint_model), 0},
};
#define VERSION_COUNT (sizeof versions / sizeof versions[0])

/* The header after the model block: the 4-byte fields, then (at the next multiple of 8 bytes in
 * the file, as every version's C struct laid them out) the 8-byte ones. */
typedef struct checkpoint_fields4 {
    int32_t mode, lanes, window, segment;
    uint32_t qmark;
} checkpoint_fields4;

typedef struct checkpoint_fields8 {
    uint64_t seed, data_hash;
    int64_t step, epoch, window_index, tokens;
    double seconds;
    fwm__qa_metrics running;
    double running_loss;
    int64_t running_steps;
} checkpoint_fields8;

typedef struct checkpoint_header {
    char magic[8];
    uint32_t version, hparams_size;
    checkpoint_model model;
    checkpoint_fields4 f4;
    checkpoint_fields8 f8;
} checkpoint_header;

/* Zero bytes that take a file offset from `at` to the next multiple of 8. */
static size_t pad8(size_t at) { return (8 - at % 8) % 8; }

/* The header of version row `v`, after the magic, version and block size (16 bytes). */
static void put_header_rest(hashed_file *hf, const checkpoint_header *h, const struct checkpoint_version *v)
{
    static const unsigned char zeros[8] = {0};
    put(hf, v->bare ? (const void *)&h->model.fwm : (const void *)&h->model, v->block_bytes);
    put(hf, &h->f4, sizeof h->f4);
    put(hf, zeros, pad8(16 + v->block_bytes + sizeof h->f4));
    put(hf, &h->f8, sizeof h->f8);
}

static int get_header_rest(hashed_file *hf, checkpoint_header *h, const struct checkpoint_version *v)
{
    unsigned char pad[8];
    if (v->bare)
        h->model.arch = FWM_ARCH_FWM;
    return get(hf, v->bare ? (void *)&h->model.fwm : (void *)&h->model, v->block_bytes) ||
           get(hf, &h->f4, sizeof h->f4) || get(hf, pad, pad8(16 + v->block_bytes + sizeof h->f4)) ||
           get(hf, &h->f8, sizeof h->f8);
}

static void fill_header(const fwm__trainer *tr, checkpoint_header *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CHECKPOINT_MAGIC, 8);
    h->version = CHECKPOINT_VERSION;
    h->hparams_size = (uint32_t)sizeof(checkpoint_model);
    h->model.arch = (uint32_t)tr->spec.arch;
    if (tr->spec.arch == FWM_ARCH_LSTM) { /* field by field: the padding stays zero */
        const fwm_lstm_hparams *l = &tr->spec.lstm;
        h->model.lstm.vocab_size = l->vocab_size;
        h->model.lstm.embedding_length = l->embedding_length;
        h->model.lstm.hidden_size = l->hidden_size;
        h->model.lstm.layer_count = l->layer_count;
        h->model.lstm.residual = l->residual;
        h->model.lstm.forget_bias = l->forget_bias;
        h->model.lstm.padding_token_id = l->padding_token_id;
        h->model.lstm.eos_token_id = l->eos_token_id;
        h->model.dropout = tr->opt.dropout;
    } else if (tr->spec.arch == FWM_ARCH_MNM) {
        const fwm_mnm_hparams *m = &tr->spec.mnm;
        h->model.mnm.vocab_size = m->vocab_size;
        h->model.mnm.embedding_length = m->embedding_length;
        h->model.mnm.hidden_size = m->hidden_size;
        h->model.mnm.head_count = m->head_count;
        h->model.mnm.key_length = m->key_length;
        h->model.mnm.value_length = m->value_length;
        h->model.mnm.memory_hidden = m->memory_hidden;
        h->model.mnm.memory_layers = m->memory_layers;
        h->model.mnm.output_length = m->output_length;
        h->model.mnm.forget_bias = m->forget_bias;
        h->model.mnm.padding_token_id = m->padding_token_id;
        h->model.mnm.eos_token_id = m->eos_token_id;
        h->model.meta_weight = tr->opt.meta_weight;
    } else if (tr->spec.arch == FWM_ARCH_GFW) {
        h->model.gfw = tr->spec.gfw; /* eight 4-byte fields: no padding */
    } else if (tr->spec.arch == FWM_ARCH_STM) { /* field by field: the padding stays zero */
        const fwm_stm_hparams *m = &tr->spec.stm;
        fwm_stm_hparams *to = &h->model.stm;
#define COPY_(field, key, kind, def, low, high) to->field = m->field;
        FWM_STM_HPARAM_LIST(COPY_)
#undef COPY_
        h->model.stm_fix_alpha = (uint32_t)tr->opt.stm_fix_alpha;
        h->model.stm_train_output = (uint32_t)tr->opt.stm_train_output;
    } else {
        h->model.fwm = tr->opt.hp;
        if (h->model.fwm.block_count == 0) h->model.fwm.block_count = 1; /* 0 means 1 */
        h->model.dropout = tr->opt.dropout; /* zero unless given (checkpoints before: zero) */
    }
    h->model.tie_embeddings = (uint32_t)tr->opt.tie_embeddings;
    h->f4.mode = tr->opt.mode;
    h->f4.lanes = tr->opt.lanes;
    h->f4.window = tr->opt.window;
    h->f4.segment = tr->net->segment;
    h->f4.qmark = tr->opt.qmark_id;
    h->f8.seed = tr->opt.seed;
    h->f8.data_hash = tr->data_hash;
    h->f8.step = tr->step;
    h->f8.epoch = tr->epoch;
    h->f8.window_index = (int64_t)tr->window_index;
    h->f8.tokens = tr->tokens;
    h->f8.seconds = tr->seconds;
    h->f8.running = tr->running;
    h->f8.running_loss = tr->running_loss;
    h->f8.running_steps = tr->running_steps;
}

static fwm_status write_file(const fwm__trainer *tr, const float *all_state, const char *path,
                             fwm_error *err)
{
    const fwm__tensor_layout *layout = &tr->net->layout;
    const float *arrays[3] = {tr->net->params, tr->adam_m, tr->adam_v};
    static const char *const array_names[3] = {"parameters", "first Adam moments",
                                               "second Adam moments"};
    for (int a = 0; a < 3; a++) {
        long bad = fwm__first_nonfinite(layout, arrays[a]);
        if (bad >= 0)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                              "not writing checkpoint %s: the %s of tensor %s are not all finite",
                              path, array_names[a], layout->names[bad]);
    }
    size_t state_n = (size_t)tr->opt.lanes * tr->net->state_size;
    for (size_t i = 0; i < state_n; i++)
        if (!isfinite(all_state[i]))
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                              "not writing checkpoint %s: the state of lane %zu is not finite",
                              path, i / tr->net->state_size);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    hashed_file hf = {fopen(tmp, "wb"), 1469598103934665603ull, 0};
    if (!hf.f)
        return fwm__error(err, FWM_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    checkpoint_header h;
    fill_header(tr, &h);
    put(&hf, &h, 16);
    put_header_rest(&hf, &h, &versions[VERSION_COUNT - 1]);
    uint64_t n = tr->net->layout.total;
    put(&hf, &n, sizeof n);
    put(&hf, tr->net->params, n * sizeof(float));
    put(&hf, tr->adam_m, n * sizeof(float));
    put(&hf, tr->adam_v, n * sizeof(float));
    uint64_t k = (uint64_t)tr->opt.lanes * tr->net->state_size;
    put(&hf, &k, sizeof k);
    put(&hf, all_state, k * sizeof(float));
    uint64_t hash = hf.hash;
    put(&hf, &hash, sizeof hash);
    int failed = hf.failed;
    if (fclose(hf.f) != 0)
        failed = 1;
    if (failed || rename(tmp, path) != 0) {
        remove(tmp);
        return fwm__error(err, FWM_ERR_IO, "cannot write checkpoint %s: %s", path,
                          strerror(errno));
    }
    return FWM_OK;
}

/* Every rank returns rank 0's status; the others' message says it failed there. */
static fwm_status agree(const fwm__trainer *tr, fwm_status status, const char *what,
                        const char *path, fwm_error *err)
{
    int32_t shared = (int32_t)status;
    fwm__dist_bcast(tr->dist, &shared, sizeof shared);
    if (!fwm__trainer_is_root(tr) && shared != FWM_OK)
        return fwm__error(err, (fwm_status)shared, "rank 0 could not %s %s (see its message)",
                          what, path);
    return (fwm_status)shared;
}

fwm_status fwm__trainer_save_checkpoint(const fwm__trainer *tr, const char *path, fwm_error *err)
{
    size_t k = (size_t)tr->opt.lanes * tr->net->state_size;
    float *all_state = malloc(k * sizeof *all_state);
    int failed = all_state == NULL;
    if (fwm__dist_any(tr->dist, failed)) {
        free(all_state);
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "checkpoint %s: out of memory", path);
    }
    fwm__trainer_gather_state(tr, all_state);
    fwm_status status = FWM_OK;
    if (fwm__trainer_is_root(tr))
        status = write_file(tr, all_state, path, err);
    free(all_state);
    return agree(tr, status, "write the checkpoint", path, err);
}

/* What a checkpoint holds besides the model's arrays, as rank 0 sends it to the others. */
typedef struct loaded_counters {
    int64_t step, epoch, window_index, tokens;
    double seconds;
    fwm__qa_metrics running;
    double running_loss;
    int64_t running_steps;
} loaded_counters;

static fwm_status read_file(fwm__trainer *tr, const char *path, float *p, float *m, float *v,
                            float *state, loaded_counters *out, fwm_error *err)
{
    hashed_file hf = {fopen(path, "rb"), 1469598103934665603ull, 0};
    if (!hf.f)
        return fwm__error(err, FWM_ERR_IO, "cannot open checkpoint %s: %s", path,
                          strerror(errno));
    fwm_status status = FWM_OK;
    checkpoint_header h, want;
    fill_header(tr, &want);
    struct {
        char magic[8];
        uint32_t version, hparams_size;
    } start;
    if (get(&hf, &start, sizeof start)) {
        status = fwm__error(err, FWM_ERR_FORMAT, "%s: too short for a checkpoint header", path);
        goto done;
    }
    const struct checkpoint_version *version = NULL;
    for (size_t i = 0; i < VERSION_COUNT; i++)
        if (start.version == versions[i].version && start.hparams_size == versions[i].block_bytes)
            version = &versions[i];
    if (memcmp(start.magic, CHECKPOINT_MAGIC, 8) != 0 || !version) {
        status = fwm__error(err, FWM_ERR_FORMAT,
                            "%s: not an fwm-train checkpoint of version 1 to %u", path,
                            CHECKPOINT_VERSION);
        goto done;
    }
    memset(&h, 0, sizeof h);
    memcpy(&h, &start, sizeof start);
    if (get_header_rest(&hf, &h, version)) {
        status = fwm__error(err, FWM_ERR_FORMAT, "%s: too short for a checkpoint header", path);
        goto done;
    }
    /* fwm_hparams.block_count lives in what was padding, zero in checkpoints written before the
     * stacked FWM: those are of one layer. */
    if (h.model.arch == FWM_ARCH_FWM && h.model.fwm.block_count == 0) h.model.fwm.block_count = 1;
    if (h.model.arch != want.model.arch) {
        status = fwm__error(err, FWM_ERR_FORMAT,
                            "%s: the checkpoint is of architecture %s, this run's is %s (resume "
                            "with the --arch it was made with)",
                            path, fwm__train_arch_name((fwm_arch)h.model.arch),
                            fwm__train_arch_name((fwm_arch)want.model.arch));
        goto done;
    }
#define SAME_(field, what)                                                                       \
    if (memcmp(&h.field, &want.field, sizeof h.field) != 0) {                                    \
        status = fwm__error(err, FWM_ERR_FORMAT,                                                 \
                            "%s: the checkpoint's %s differs from this run's (resume with the " \
                            "options and data it was made with)",                                \
                            path, what);                                                         \
        goto done;                                                                               \
    }
    SAME_(model.fwm, "model hyperparameters or vocabulary size");
    SAME_(model.lstm, "model hyperparameters or vocabulary size");
    SAME_(model.mnm, "model hyperparameters or vocabulary size");
    SAME_(model.gfw, "model hyperparameters or vocabulary size");
    SAME_(model.stm, "model hyperparameters or vocabulary size");
    SAME_(model.stm_fix_alpha, "held alphas (--fix-alpha)");
    SAME_(model.stm_train_output, "trained output matrix (--train-output)");
    SAME_(model.tie_embeddings, "tied embeddings (--tie-embeddings)");
    SAME_(model.meta_weight, "meta-objective weight (--meta-weight)");
    SAME_(model.dropout, "dropout");
    SAME_(f4.mode, "mode");
    SAME_(f4.lanes, "batch (lanes)");
    SAME_(f4.window, "window");
    SAME_(f4.segment, "segment");
    SAME_(f4.qmark, "\"?\" token id");
    SAME_(f8.seed, "seed");
    SAME_(f8.data_hash, "training data");
#undef SAME_
    uint64_t n = 0, k = 0, stored = 0;
    size_t total = tr->net->layout.total;
    size_t state_n = (size_t)tr->opt.lanes * tr->net->state_size;
    if (get(&hf, &n, sizeof n) || n != total || get(&hf, p, total * sizeof *p) ||
        get(&hf, m, total * sizeof *m) || get(&hf, v, total * sizeof *v) ||
        get(&hf, &k, sizeof k) || k != state_n || get(&hf, state, state_n * sizeof *state)) {
        status = fwm__error(err, FWM_ERR_FORMAT,
                            "%s: truncated or wrong sizes (parameters %llu, expected %zu; state "
                            "%llu, expected %zu)",
                            path, (unsigned long long)n, total, (unsigned long long)k, state_n);
        goto done;
    }
    uint64_t hash = hf.hash;
    if (get(&hf, &stored, sizeof stored) || stored != hash) {
        status = fwm__error(err, FWM_ERR_CHECKSUM, "%s: checksum mismatch (damaged checkpoint)",
                            path);
        goto done;
    }
    out->step = h.f8.step;
    out->epoch = h.f8.epoch;
    out->window_index = h.f8.window_index;
    out->tokens = h.f8.tokens;
    out->seconds = h.f8.seconds;
    out->running = h.f8.running;
    out->running_loss = h.f8.running_loss;
    out->running_steps = h.f8.running_steps;
done:
    fclose(hf.f);
    return status;
}

fwm_status fwm__trainer_load_checkpoint(fwm__trainer *tr, const char *path, fwm_error *err)
{
    size_t total = tr->net->layout.total;
    size_t state_n = (size_t)tr->opt.lanes * tr->net->state_size;
    float *p = malloc(total * sizeof *p), *m = malloc(total * sizeof *m),
          *v = malloc(total * sizeof *v), *state = malloc(state_n * sizeof *state);
    fwm_status status = FWM_OK;
    loaded_counters c;
    memset(&c, 0, sizeof c);
    if (fwm__dist_any(tr->dist, !p || !m || !v || !state)) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
    if (fwm__trainer_is_root(tr))
        status = read_file(tr, path, p, m, v, state, &c, err);
    status = agree(tr, status, "load the checkpoint", path, err);
    if (status != FWM_OK)
        goto done;
    fwm__dist_bcast(tr->dist, p, total * sizeof *p);
    fwm__dist_bcast(tr->dist, m, total * sizeof *m);
    fwm__dist_bcast(tr->dist, v, total * sizeof *v);
    fwm__dist_bcast(tr->dist, state, state_n * sizeof *state);
    fwm__dist_bcast(tr->dist, &c, sizeof c);
    memcpy(tr->net->params, p, total * sizeof *p);
    fwm__trainer_sync_params(tr);
    memcpy(tr->adam_m, m, total * sizeof *m);
    memcpy(tr->adam_v, v, total * sizeof *v);
    fwm__trainer_set_state(tr, state);
    tr->step = c.step;
    tr->epoch = c.epoch;
    tr->window_index = (size_t)c.window_index;
    tr->tokens = c.tokens;
    tr->seconds = c.seconds;
    tr->running = c.running;
    tr->running_loss = c.running_loss;
    tr->running_steps = c.running_steps;
    status = fwm__trainer_start_epoch(tr, err);
done:
    free(p);
    free(m);
    free(v);
    free(state);
    return status;
}
