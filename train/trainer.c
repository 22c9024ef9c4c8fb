/* trainer.c - the training loop (see trainer.h). */
#include "trainer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "babi_standard.h"
#include "fwm_error.h"
#include "fwm_rng.h"
#include "progress.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t hash_split(const fwm__catbabi_split *split)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < split->n_words; i++)
        h = (h ^ split->words[i]) * 1099511628211ull;
    for (size_t i = 0; i < split->n_samples; i++)
        h = (h ^ split->lengths[i] ^ ((uint64_t)split->tasks[i] << 32)) * 1099511628211ull;
    return h;
}

/* One group's share of a step's figures (exchanged between ranks as bytes). */
typedef struct fwm__group_stats {
    double loss_sum;
    double meta_sum;
    fwm__qa_metrics metrics;
} fwm__group_stats;

int fwm__trainer_is_root(const fwm__trainer *tr)
{
    return tr->dist->rank == 0;
}

/* Bytes [offset[r], offset[r] + count[r]) of a [G][item] array held by rank r (its groups). */
static void rank_parts(const fwm__trainer *tr, const int *group_first, size_t item,
                       size_t *offset, size_t *count)
{
    for (int r = 0; r < tr->dist->size; r++) {
        size_t g0, g1;
        fwm__pool_range((size_t)tr->n_groups, r, tr->dist->size, &g0, &g1);
        offset[r] = (size_t)group_first[g0] * item;
        count[r] = (size_t)(group_first[g1] - group_first[g0]) * item;
    }
}

/* Collective, in place: every rank gets every group's part of a [G or lanes][item] array. */
static fwm_status exchange(const fwm__trainer *tr, void *buf, const int *group_first, size_t item,
                           int to_all, fwm_error *err)
{
    if (tr->dist->size <= 1)
        return FWM_OK;
    size_t *offset = malloc(2 * (size_t)tr->dist->size * sizeof *offset);
    if (!offset)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer: out of memory");
    rank_parts(tr, group_first, item, offset, offset + tr->dist->size);
    if (to_all)
        fwm__dist_allgather(tr->dist, buf, offset, offset + tr->dist->size);
    else
        fwm__dist_gather(tr->dist, buf, offset, offset + tr->dist->size);
    free(offset);
    return FWM_OK;
}

static const int *identity_groups(const fwm__trainer *tr)
{
    return tr->group_lane + tr->n_groups + 1; /* [0, 1, .., G] after the lane bounds */
}

void fwm__trainer_gather_state(const fwm__trainer *tr, float *all)
{
    size_t k = tr->net->state_size;
    for (int g = tr->group_begin; g < tr->group_end; g++) {
        const fwm__net *tm = tr->group_net[g - tr->group_begin];
        memcpy(all + (size_t)tr->group_lane[g] * k, tm->state,
               (size_t)tm->config.lanes * k * sizeof(float));
    }
    fwm_error ignored;
    exchange(tr, all, tr->group_lane, k * sizeof(float), 0, &ignored);
}

void fwm__trainer_set_state(fwm__trainer *tr, const float *all)
{
    size_t k = tr->net->state_size;
    for (int g = tr->group_begin; g < tr->group_end; g++) {
        fwm__net *tm = tr->group_net[g - tr->group_begin];
        memcpy(tm->state, all + (size_t)tr->group_lane[g] * k,
               (size_t)tm->config.lanes * k * sizeof(float));
    }
}

void fwm__trainer_sync_params(fwm__trainer *tr)
{
    if (tr->opt.tie_embeddings) { /* output.weight is a copy of Emb: the file stores both */
        const fwm__tensor_layout *lay = &tr->net->layout;
        size_t emb = lay->count, out = lay->count;
        for (size_t k = 0; k < lay->count; k++) {
            if (strcmp(lay->names[k], "token_embd.weight") == 0)
                emb = k;
            if (strcmp(lay->names[k], "output.weight") == 0)
                out = k;
        }
        if (emb < lay->count && out < lay->count && lay->size[emb] == lay->size[out])
            memcpy(tr->net->params + lay->offset[out], tr->net->params + lay->offset[emb],
                   lay->size[emb] * sizeof(float));
    }
    for (int i = 1; i < tr->group_end - tr->group_begin; i++)
        memcpy(tr->group_net[i]->params, tr->net->params, tr->net->layout.total * sizeof(float));
}

void fwm__trainer_free(fwm__trainer *tr)
{
    if (!tr)
        return;
    if (tr->group_net)
        for (int i = 0; i < tr->group_end - tr->group_begin; i++)
            fwm__net_free(tr->group_net[i]);
    free(tr->group_net);
    free(tr->group_lane);
    free(tr->group_grads);
    free(tr->group_stats);
    fwm__pool_free(tr->pool);
    free(tr->adam_m);
    free(tr->adam_v);
    fwm__catbabi_stream_release(&tr->stream);
    free(tr->order);
    free(tr->x);
    free(tr->y);
    free(tr->tasks);
    free(tr->state_before);
    free(tr->reset_flags);
    free(tr->reset_scratch);
    free(tr);
}

long fwm__first_nonfinite(const fwm__tensor_layout *layout, const float *values)
{
    for (size_t k = 0; k < layout->count; k++) {
        const float *v = values + layout->offset[k];
        for (size_t i = 0; i < layout->size[k]; i++)
            if (!isfinite(v[i]))
                return (long)k;
    }
    return -1;
}

fwm_status fwm__trainer_start_epoch(fwm__trainer *tr, fwm_error *err)
{
    fwm__catbabi_stream_release(&tr->stream);
    fwm__shuffle_order(tr->order, tr->train->n_samples, tr->opt.seed, 1 + (uint64_t)tr->epoch);
    if (tr->opt.reset_per_sample) /* the standard protocol: samples from the reset state */
        return fwm__catbabi_stream_build_aligned(&tr->stream, tr->train, tr->order, tr->eos_id,
                                                 tr->pad_id, tr->opt.lanes, tr->opt.window, err);
    /* a sequence-to-sequence split (ar_task.h) is read as it is, every epoch */
    return fwm__catbabi_stream_build(&tr->stream, tr->train, tr->train->targets ? NULL : tr->order,
                                     tr->eos_id, tr->opt.lanes, err);
}

fwm_status fwm__trainer_create(const fwm__train_options *options, const fwm__catbabi_split *train,
                               const fwm__catbabi_split *valid, uint32_t pad_id, uint32_t eos_id,
                               const float *init_params, fwm__trainer **out, fwm_error *err)
{
    *out = NULL;
    if (options->threads < 1 || options->lanes < 1 || options->window < 1 ||
        train->n_samples == 0)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "training needs threads, lanes, window >= 1 and training samples "
                          "(got %d, %d, %d, %zu)",
                          options->threads, options->lanes, options->window, train->n_samples);
    fwm__trainer *tr = calloc(1, sizeof *tr);
    if (!tr)
        return fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer: out of memory");
    tr->opt = *options;
    fwm__divergence_init(&tr->divergence);
    tr->single_process.size = 1;
    tr->single_process.local_size = 1;
    tr->dist = options->dist ? options->dist : &tr->single_process;
    int G = options->lane_groups > 0 ? options->lane_groups : tr->dist->size;
    if (G > options->lanes || G < tr->dist->size) {
        int processes = tr->dist->size;
        free(tr);
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "--lane-groups %d must be between the number of processes (%d: each "
                          "trains at least one group) and --lanes (%d)",
                          G, processes, options->lanes);
    }
    tr->opt.lane_groups = G;
    tr->n_groups = G;
    tr->train = train;
    tr->valid = valid;
    tr->pad_id = pad_id;
    tr->eos_id = eos_id;
    tr->data_hash = hash_split(train);
    /* every architecture's sizes are carried; the net and the checkpoint read those of `arch` */
    tr->spec = (fwm__model_spec){.arch = options->arch,
                                 .fwm = options->hp,
                                 .lstm = options->lstm,
                                 .mnm = options->mnm,
                                 .gfw = options->gfw,
                                 .stm = options->stm};
    fwm_status status = FWM_OK;
    if (options->threads > 1) {
        tr->pool = fwm__pool_create(options->threads);
        if (!tr->pool) {
            status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "cannot start %d threads",
                                options->threads);
            goto fail;
        }
    }
    /* groups: lane bounds [G + 1], then 0..G (the group bounds of a per-group array) */
    tr->group_lane = malloc((2 * (size_t)G + 2) * sizeof *tr->group_lane);
    if (!tr->group_lane) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer: out of memory");
        goto fail;
    }
    for (int g = 0; g <= G; g++) {
        size_t b0, b1;
        fwm__pool_range((size_t)options->lanes, g < G ? g : G - 1, G, &b0, &b1);
        tr->group_lane[g] = g < G ? (int)b0 : (int)b1;
        tr->group_lane[G + 1 + g] = g;
    }
    size_t first, last;
    fwm__pool_range((size_t)G, tr->dist->rank, tr->dist->size, &first, &last);
    tr->group_begin = (int)first;
    tr->group_end = (int)last;
    tr->group_net = calloc(last - first, sizeof *tr->group_net);
    if (!tr->group_net) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer: out of memory");
        goto fail;
    }
    for (int g = tr->group_begin; g < tr->group_end; g++) {
        fwm__net_config config;
        memset(&config, 0, sizeof config);
        config.model = tr->spec;
        config.lanes = tr->group_lane[g + 1] - tr->group_lane[g];
        config.window = options->window;
        config.segment = options->segment;
        config.loss_mode = options->mode;
        config.loss_token_id = options->qmark_id;
        config.dropout = options->dropout;
        config.tie_embeddings = options->tie_embeddings;
        config.meta_weight = options->meta_weight;
        config.fix_alpha = options->stm_fix_alpha;
        config.train_output = options->stm_train_output;
        status = fwm__net_create(&config, tr->pool, &tr->group_net[g - tr->group_begin], err);
        if (status != FWM_OK)
            goto fail;
    }
    tr->net = tr->group_net[0];
    tr->tm = options->arch == FWM_ARCH_FWM ? tr->net->impl : NULL;
    size_t n = tr->net->layout.total, cells = (size_t)options->lanes * (size_t)options->window;
    if (G > 1) {
        tr->group_grads = malloc((size_t)G * n * sizeof(float));
        tr->group_stats = calloc((size_t)G, sizeof *tr->group_stats);
        if (!tr->group_grads || !tr->group_stats) {
            status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY,
                                "trainer: out of memory for %d groups' gradients", G);
            goto fail;
        }
    }
    tr->adam_m = calloc(n, sizeof(float));
    tr->adam_v = calloc(n, sizeof(float));
    tr->order = malloc(train->n_samples * sizeof *tr->order);
    tr->x = malloc(cells * sizeof *tr->x);
    tr->y = malloc(cells * sizeof *tr->y);
    tr->tasks = malloc(cells);
    tr->state_before = malloc((size_t)options->lanes * tr->net->state_size * sizeof(float));
    if (options->reset_per_sample) {
        tr->reset_flags = calloc((size_t)options->lanes, 1);
        tr->reset_scratch =
            malloc((size_t)options->lanes * tr->net->state_size * sizeof(float));
        if (!tr->reset_flags || !tr->reset_scratch) {
            status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer: out of memory");
            goto fail;
        }
    }
    if (!tr->adam_m || !tr->adam_v || !tr->order || !tr->x || !tr->y || !tr->tasks ||
        !tr->state_before) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer: out of memory");
        goto fail;
    }
    if (init_params)
        memcpy(tr->net->params, init_params, n * sizeof(float));
    else
        fwm__net_init_weights(tr->net, options->seed);
    if (!init_params && options->embedding_init > 0) { /* --embedding-init X: Emb ~ U(-X, X) */
        const fwm__tensor_layout *lay = &tr->net->layout;
        for (size_t k = 0; k < lay->count; k++)
            if (strcmp(lay->names[k], "token_embd.weight") == 0) {
                fwm__rng rng;
                fwm__rng_seed(&rng, options->seed, FWM__EMBEDDING_INIT_STREAM);
                float *emb = tr->net->params + lay->offset[k];
                for (size_t i = 0; i < lay->size[k]; i++)
                    emb[i] = (float)fwm__rng_uniform(&rng, -options->embedding_init,
                                                     options->embedding_init);
            }
    }
    fwm__trainer_sync_params(tr);
    for (int i = 0; i < tr->group_end - tr->group_begin; i++) /* the MNM's holds M's start */
        fwm__net_reset_state(tr->group_net[i]);
    status = fwm__trainer_start_epoch(tr, err);
    if (status != FWM_OK)
        goto fail;
    *out = tr;
    return FWM_OK;
fail:
    fwm__trainer_free(tr);
    return status;
}

/* The step's answer metrics: at "?" for catbAbI; for a sequence-to-sequence split, at the targets
 * that are not the blank (the padding id). */
static void add_answer_metrics(const fwm__trainer *tr, fwm__qa_metrics *m, const fwm__net *net,
                               const uint8_t *tasks)
{
    if (!tr->train->targets) {
        fwm__metrics_add(m, net, tr->opt.qmark_id, tasks);
        return;
    }
    fwm__seq_metrics seq;
    memset(&seq, 0, sizeof seq);
    fwm__seq_metrics_add(&seq, net, tr->pad_id);
    fwm__qa_metrics answers;
    fwm__seq_metrics_to_qa(&seq, &answers);
    fwm__metrics_merge(m, &answers);
}

fwm_status fwm__trainer_step(fwm__trainer *tr, fwm_error *err)
{
    size_t windows = fwm__catbabi_window_count(&tr->stream, tr->opt.window);
    if (tr->window_index >= windows) {
        tr->epoch++;
        tr->window_index = 0;
        fwm_status status = fwm__trainer_start_epoch(tr, err);
        if (status != FWM_OK)
            return status;
    }
    size_t start = tr->window_index * (size_t)tr->opt.window;
    size_t left = tr->stream.lane_length - start;
    int len = left < (size_t)tr->opt.window ? (int)left : tr->opt.window;
    fwm__catbabi_window(&tr->stream, start, len, tr->pad_id, tr->x, tr->y, tr->tasks);
    fwm__net *tm = tr->net;
    fwm_status checked = fwm__net_check_ids(tm, tr->x, tr->y, tr->opt.lanes, len, err);
    if (checked != FWM_OK)
        return checked;
    size_t n = tm->layout.total, cells = (size_t)len * (size_t)tr->opt.lanes;
    long loss_rows = 0; /* of all groups: the mean loss divides by it */
    for (size_t i = 0; i < cells; i++)
        loss_rows += fwm__net_is_loss_position(tm, tr->x[i], tr->y[i]);
    long meta_rows = fwm__net_count_meta_rows(tm, tr->x, cells); /* the same (mnm) */
    int G = tr->n_groups;
    if (tr->opt.reset_per_sample) { /* lanes that start a sample here start from the reset state */
        fwm__catbabi_sample_starts(&tr->stream, start, tr->reset_flags);
        for (int g = tr->group_begin; g < tr->group_end; g++)
            fwm__net_reset_lanes(tr->group_net[g - tr->group_begin],
                                 tr->reset_flags + tr->group_lane[g], tr->reset_scratch);
    }
    for (int g = tr->group_begin; g < tr->group_end; g++) /* to go back to if the step fails */
        memcpy(tr->state_before + (size_t)tr->group_lane[g] * tm->state_size,
               tr->group_net[g - tr->group_begin]->state,
               (size_t)tr->group_net[g - tr->group_begin]->config.lanes * tm->state_size *
                   sizeof(float));
    fwm__qa_metrics running_before = tr->running;
    int inject_nan = tr->opt.fault_nan_step == tr->step + 1;
    if (inject_nan)
        tr->opt.fault_nan_step = 0; /* once */
    for (int g = tr->group_begin; g < tr->group_end; g++) {
        fwm__net *gt = tr->group_net[g - tr->group_begin];
        size_t at = (size_t)tr->group_lane[g] * (size_t)len; /* lane-major: a group's lanes are
                                                                contiguous */
        fwm__net_zero_grads(gt);
        /* masks of (seed, step, lane): the same whatever the groups and processes */
        fwm__net_set_dropout(gt, tr->opt.seed, (uint64_t)tr->step, tr->group_lane[g]);
        fwm__net_forward(gt, tr->x + at, tr->y + at, len);
        if (G == 1) {
            add_answer_metrics(tr, &tr->running, gt, tr->tasks);
        } else {
            fwm__group_stats *st = &tr->group_stats[g];
            memset(st, 0, sizeof *st);
            st->loss_sum = gt->loss_sum;
            st->meta_sum = gt->meta_sum;
            add_answer_metrics(tr, &st->metrics, gt, tr->tasks + at);
        }
        fwm__net_backward_meta(gt, loss_rows, meta_rows);
        if (inject_nan && g == tr->group_begin) /* tests: a gradient that is not finite */
            gt->grads[gt->layout.offset[gt->layout.count - 1]] = NAN;
        if (G > 1)
            memcpy(tr->group_grads + (size_t)g * n, gt->grads, n * sizeof(float));
    }
    double loss_sum = tm->loss_sum, meta_sum = tm->meta_sum;
    if (G > 1) { /* every group's gradient and figures on every rank, then sums in group order */
        fwm_status status =
            exchange(tr, tr->group_grads, identity_groups(tr), n * sizeof(float), 1, err);
        if (status == FWM_OK)
            status = exchange(tr, tr->group_stats, identity_groups(tr),
                              sizeof *tr->group_stats, 1, err);
        if (status != FWM_OK)
            return status;
        memcpy(tm->grads, tr->group_grads, n * sizeof(float));
        loss_sum = tr->group_stats[0].loss_sum;
        meta_sum = tr->group_stats[0].meta_sum;
        fwm__metrics_merge(&tr->running, &tr->group_stats[0].metrics);
        for (int g = 1; g < G; g++) {
            const float *part = tr->group_grads + (size_t)g * n;
            for (size_t i = 0; i < n; i++)
                tm->grads[i] += part[i];
            loss_sum += tr->group_stats[g].loss_sum;
            meta_sum += tr->group_stats[g].meta_sum;
            fwm__metrics_merge(&tr->running, &tr->group_stats[g].metrics);
        }
    }
    /* a loss or gradient that is not finite: report it, put the lanes back, skip the update */
    long bad = isfinite(loss_sum) && isfinite(meta_sum) ? fwm__first_nonfinite(&tm->layout, tm->grads)
                                                        : -2;
    if (bad != -1) {
        tr->skipped_steps++;
        tr->nonfinite_in_row++;
        const char *what = bad >= 0 ? tm->layout.names[bad] : NULL;
        if (fwm__trainer_is_root(tr))
            fprintf(stderr,
                    "fwm-train: step %ld: %s%s%s is not finite; the window is skipped (no update, "
                    "the lanes' state as before it)\n",
                    tr->step + 1, what ? "the gradient of " : "the loss",
                    what ? what : "", what ? "" : (isfinite(loss_sum) ? " (meta term)" : ""));
        fwm__trainer_set_state(tr, tr->state_before);
        tr->running = running_before;
        tr->window_index++;
        if (tr->nonfinite_in_row > tr->opt.max_nonfinite)
            return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                              "step %ld: %d window%s in a row with a loss or gradient that is not "
                              "finite (last: %s%s); stopping. A checkpoint written before is "
                              "finite; a lower --lr or --clip may help",
                              tr->step + 1, tr->nonfinite_in_row,
                              tr->nonfinite_in_row == 1 ? "" : "s",
                              what ? "the gradient of " : "the loss", what ? what : "");
        return FWM_OK;
    }
    tr->nonfinite_in_row = 0;
    tr->last_loss = loss_rows > 0 ? loss_sum / (double)loss_rows : 0;
    tr->last_meta = meta_rows > 0 ? meta_sum / (double)meta_rows : 0;
    double norm = tr->opt.adam.clip_norm > 0 ? fwm__grad_norm(tm->grads, n) : 0;
    tr->step++;
    fwm__adam_update(&tr->opt.adam, tr->step, norm, tm->params, tm->grads, tr->adam_m, tr->adam_v,
                     n);
    fwm__trainer_sync_params(tr);
    tr->window_index++;
    tr->tokens += (long)len * tr->opt.lanes;
    tr->running_loss += tr->last_loss;
    tr->running_steps++;
    char report[640]; /* a window without loss positions (or without a meta term) has no figure */
    if (fwm__divergence_step(&tr->divergence, tr->step, loss_rows > 0 ? tr->last_loss : NAN,
                             meta_rows > 0 ? tr->last_meta : NAN, report, sizeof report) &&
        fwm__trainer_is_root(tr))
        fprintf(stderr, "fwm-train: %s\n", report);
    return FWM_OK;
}

fwm_status fwm__trainer_evaluate(fwm__trainer *tr, fwm__qa_metrics *out, fwm_error *err)
{
    if (!tr->valid)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "no validation split");
    if (tr->valid->targets) { /* all the metrics kept; the answers' in *out */
        fwm_status status = fwm__evaluate_seq(&tr->spec, tr->net->params, tr->valid, tr->pad_id,
                                              &tr->opt.eval, tr->pool, &tr->last_valid_seq, err);
        fwm__seq_metrics_to_qa(&tr->last_valid_seq, out);
        return status;
    }
    return fwm__evaluate(&tr->spec, tr->net->params, tr->valid, tr->pad_id, tr->eos_id,
                         tr->opt.qmark_id, &tr->opt.eval, tr->pool, out, err);
}

static fwm_status save_checkpoint(fwm__trainer *tr, fwm_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoint.bin", tr->opt.run_dir);
    return fwm__trainer_save_checkpoint(tr, path, err);
}

/* --task text: after an evaluation, when the valid perplexity is the run's best so far (as
 * <run_dir>/best/best.txt records it: "step perplexity"), the checkpoint goes to
 * <run_dir>/best/checkpoint.bin, from which `fwm-train --resume --steps STEP --run-dir <run_dir>/best`
 * writes the model selected on validation. Collective: rank 0 decides, every rank saves. */
static fwm_status keep_best(fwm__trainer *tr, fwm_error *err)
{
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/best", tr->opt.run_dir);
    snprintf(path, sizeof path, "%s/best.txt", dir);
    int32_t better = 0;
    double ppl = fwm__metrics_perplexity(&tr->last_valid);
    if (fwm__trainer_is_root(tr)) {
        double best = INFINITY;
        long best_step;
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%ld %lf", &best_step, &best) != 2)
                best = INFINITY;
            fclose(f);
        }
        better = ppl < best;
        if (better && mkdir(dir, 0755) != 0 && errno != EEXIST)
            return fwm__error(err, FWM_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    }
    fwm__dist_bcast(tr->dist, &better, sizeof better);
    if (!better)
        return FWM_OK;
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
    fwm_status status = fwm__trainer_save_checkpoint(tr, path, err);
    if (status != FWM_OK || !fwm__trainer_is_root(tr))
        return status;
    /* best.txt replaced whole (a temporary file renamed over it), after the checkpoint it names */
    char tmp[4300];
    snprintf(path, sizeof path, "%s/best.txt", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int bad = !f || fprintf(f, "%ld %.6f\n", tr->step, ppl) < 0;
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return fwm__error(err, FWM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    return FWM_OK;
}

fwm_status fwm__trainer_run(fwm__trainer *tr, fwm_error *err)
{
    const fwm__train_options *o = &tr->opt;
    double session_start = now_seconds(), last_print = session_start;
    double seconds_before = tr->seconds;
    long step_at_start = tr->step;
    fwm_status status = FWM_OK;
    tr->stopped = 0;
    int root = fwm__trainer_is_root(tr);
    while (tr->step < o->steps) {
        /* a step boundary: stop here when any rank was asked to (all ranks agree, then write) */
        if (fwm__dist_any(tr->dist, o->stop_requested && *o->stop_requested)) {
            tr->stopped = 1;
            break;
        }
        status = fwm__trainer_step(tr, err);
        if (status != FWM_OK)
            return status;
        double now = now_seconds();
        tr->seconds = seconds_before + (now - session_start);
        int last = tr->step == o->steps;
        if (root && o->progress_seconds > 0 &&
            (now - last_print >= o->progress_seconds || last)) {
            double rate = (double)(tr->step - step_at_start) * o->lanes * o->window /
                          (now - session_start);
            double per_step = (now - session_start) / (double)(tr->step - step_at_start);
            fwm__progress_print(stderr, tr, rate, per_step * (double)(o->steps - tr->step));
            last_print = now;
        }
        if (root && o->eval_every > 0 && (tr->step % o->eval_every == 0 || last) && tr->valid) {
            status = fwm__trainer_evaluate(tr, &tr->last_valid, err);
            if (status != FWM_OK)
                return status;
            tr->has_valid = 1;
            char report[320];
            if (fwm__divergence_valid(&tr->divergence, tr->step,
                                      fwm__metrics_accuracy(&tr->last_valid), report,
                                      sizeof report))
                fprintf(stderr, "fwm-train: %s\n", report);
            if (o->run_dir) {
                status = fwm__log_append(o->run_dir, tr, err);
                if (status != FWM_OK)
                    return status;
                fwm__plot_curve(o->run_dir);
            }
            if (o->progress_seconds > 0)
                fwm__progress_eval_print(stderr, tr);
        }
        if (o->eval_every > 0 && (tr->step % o->eval_every == 0 || last) && tr->valid &&
            o->report_perplexity && o->run_dir) {
            status = keep_best(tr, err);
            if (status != FWM_OK)
                return status;
        }
        if (o->eval_every > 0 && (tr->step % o->eval_every == 0 || last) && tr->valid) {
            memset(&tr->running, 0, sizeof tr->running);
            tr->running_loss = 0;
            tr->running_steps = 0;
        }
        if (o->run_dir && o->checkpoint_every > 0 && tr->step % o->checkpoint_every == 0) {
            status = save_checkpoint(tr, err);
            if (status != FWM_OK)
                return status;
        }
    }
    if (o->run_dir)
        status = save_checkpoint(tr, err);
    return status;
}
