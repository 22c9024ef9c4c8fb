/* checkpoint.c - save and restore everything a training run's next step depends on.
 *
 * File layout (native byte order; a checkpoint is for resuming on the same kind of machine, not
 * for distribution, which is what model files are for):
 *   "FWMTRCK1", u32 version, u32 sizeof(fwm_hparams), fwm_hparams,
 *   i32 mode, lanes, window, segment, u32 qmark, u64 seed, u64 training-data hash,
 *   i64 step, epoch, window_index, tokens, f64 seconds, the running metrics, f64 running loss,
 *   i64 running steps, u64 n, f32 params[n], adam m[n], adam v[n], u64 k, f32 lane state[k],
 *   u64 FNV-1a hash of every byte before it.
 * The epoch's sample order is not stored: it is a function of (seed, epoch). Written to a
 * temporary file and renamed, so a crash never leaves a half-written checkpoint.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_error.h"
#include "trainer.h"

#define CHECKPOINT_MAGIC "FWMTRCK1"
#define CHECKPOINT_VERSION 1u

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

typedef struct checkpoint_header {
    char magic[8];
    uint32_t version, hparams_size;
    fwm_hparams hp;
    int32_t mode, lanes, window, segment;
    uint32_t qmark;
    uint64_t seed, data_hash;
    int64_t step, epoch, window_index, tokens;
    double seconds;
    fwm__qa_metrics running;
    double running_loss;
    int64_t running_steps;
} checkpoint_header;

static void fill_header(const fwm__trainer *tr, checkpoint_header *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, CHECKPOINT_MAGIC, 8);
    h->version = CHECKPOINT_VERSION;
    h->hparams_size = sizeof(fwm_hparams);
    h->hp = tr->opt.hp;
    h->mode = tr->opt.mode;
    h->lanes = tr->opt.lanes;
    h->window = tr->opt.window;
    h->segment = tr->tm->config.segment;
    h->qmark = tr->opt.qmark_id;
    h->seed = tr->opt.seed;
    h->data_hash = tr->data_hash;
    h->step = tr->step;
    h->epoch = tr->epoch;
    h->window_index = (int64_t)tr->window_index;
    h->tokens = tr->tokens;
    h->seconds = tr->seconds;
    h->running = tr->running;
    h->running_loss = tr->running_loss;
    h->running_steps = tr->running_steps;
}

fwm_status fwm__trainer_save_checkpoint(const fwm__trainer *tr, const char *path, fwm_error *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    hashed_file hf = {fopen(tmp, "wb"), 1469598103934665603ull, 0};
    if (!hf.f)
        return fwm__error(err, FWM_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    checkpoint_header h;
    fill_header(tr, &h);
    put(&hf, &h, sizeof h);
    uint64_t n = tr->tm->layout.total;
    put(&hf, &n, sizeof n);
    put(&hf, tr->tm->params, n * sizeof(float));
    put(&hf, tr->adam_m, n * sizeof(float));
    put(&hf, tr->adam_v, n * sizeof(float));
    uint64_t k = (uint64_t)tr->opt.lanes * tr->tm->state_size;
    put(&hf, &k, sizeof k);
    put(&hf, tr->tm->state, k * sizeof(float));
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

fwm_status fwm__trainer_load_checkpoint(fwm__trainer *tr, const char *path, fwm_error *err)
{
    hashed_file hf = {fopen(path, "rb"), 1469598103934665603ull, 0};
    if (!hf.f)
        return fwm__error(err, FWM_ERR_IO, "cannot open checkpoint %s: %s", path,
                          strerror(errno));
    fwm_status status = FWM_OK;
    float *m = NULL, *v = NULL, *p = NULL, *state = NULL;
    checkpoint_header h, want;
    fill_header(tr, &want);
    if (get(&hf, &h, sizeof h)) {
        status = fwm__error(err, FWM_ERR_FORMAT, "%s: too short for a checkpoint header", path);
        goto done;
    }
    if (memcmp(h.magic, CHECKPOINT_MAGIC, 8) != 0 || h.version != CHECKPOINT_VERSION ||
        h.hparams_size != sizeof(fwm_hparams)) {
        status = fwm__error(err, FWM_ERR_FORMAT,
                            "%s: not an fwm-train checkpoint of version %u", path,
                            CHECKPOINT_VERSION);
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
    SAME_(hp, "model hyperparameters or vocabulary size");
    SAME_(mode, "mode");
    SAME_(lanes, "batch (lanes)");
    SAME_(window, "window");
    SAME_(segment, "segment");
    SAME_(qmark, "\"?\" token id");
    SAME_(seed, "seed");
    SAME_(data_hash, "training data");
#undef SAME_
    uint64_t n = 0, k = 0, stored = 0;
    size_t total = tr->tm->layout.total;
    size_t state_n = (size_t)tr->opt.lanes * tr->tm->state_size;
    p = malloc(total * sizeof *p);
    m = malloc(total * sizeof *m);
    v = malloc(total * sizeof *v);
    state = malloc(state_n * sizeof *state);
    if (!p || !m || !v || !state) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
    }
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
    memcpy(tr->tm->params, p, total * sizeof *p);
    memcpy(tr->adam_m, m, total * sizeof *m);
    memcpy(tr->adam_v, v, total * sizeof *v);
    memcpy(tr->tm->state, state, state_n * sizeof *state);
    tr->step = h.step;
    tr->epoch = h.epoch;
    tr->window_index = (size_t)h.window_index;
    tr->tokens = h.tokens;
    tr->seconds = h.seconds;
    tr->running = h.running;
    tr->running_loss = h.running_loss;
    tr->running_steps = h.running_steps;
    status = fwm__trainer_start_epoch(tr, err);
done:
    fclose(hf.f);
    free(p);
    free(m);
    free(v);
    free(state);
    return status;
}
