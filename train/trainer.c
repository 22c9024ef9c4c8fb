/* trainer.c - the training loop (see trainer.h). */
#include "trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fwm_error.h"
#include "fwm_model_init.h"
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

void fwm__trainer_free(fwm__trainer *tr)
{
    if (!tr)
        return;
    fwm__tm_free_f32(tr->tm);
    fwm__pool_free(tr->pool);
    free(tr->adam_m);
    free(tr->adam_v);
    fwm__catbabi_stream_release(&tr->stream);
    free(tr->order);
    free(tr->x);
    free(tr->y);
    free(tr->tasks);
    free(tr);
}

fwm_status fwm__trainer_start_epoch(fwm__trainer *tr, fwm_error *err)
{
    fwm__catbabi_stream_release(&tr->stream);
    fwm__shuffle_order(tr->order, tr->train->n_samples, tr->opt.seed, 1 + (uint64_t)tr->epoch);
    return fwm__catbabi_stream_build(&tr->stream, tr->train, tr->order, tr->eos_id,
                                     tr->opt.lanes, err);
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
    tr->train = train;
    tr->valid = valid;
    tr->pad_id = pad_id;
    tr->eos_id = eos_id;
    tr->data_hash = hash_split(train);
    fwm_status status = FWM_OK;
    if (options->threads > 1) {
        tr->pool = fwm__pool_create(options->threads);
        if (!tr->pool) {
            status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "cannot start %d threads",
                                options->threads);
            goto fail;
        }
    }
    fwm__tm_config config = {0};
    config.hp = options->hp;
    config.lanes = options->lanes;
    config.window = options->window;
    config.segment = options->segment;
    config.loss_mode = options->mode;
    config.loss_token_id = options->qmark_id;
    status = fwm__tm_create_f32(&config, tr->pool, &tr->tm, err);
    if (status != FWM_OK)
        goto fail;
    size_t n = tr->tm->layout.total, cells = (size_t)options->lanes * (size_t)options->window;
    tr->adam_m = calloc(n, sizeof(float));
    tr->adam_v = calloc(n, sizeof(float));
    tr->order = malloc(train->n_samples * sizeof *tr->order);
    tr->x = malloc(cells * sizeof *tr->x);
    tr->y = malloc(cells * sizeof *tr->y);
    tr->tasks = malloc(cells);
    if (!tr->adam_m || !tr->adam_v || !tr->order || !tr->x || !tr->y || !tr->tasks) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "trainer: out of memory");
        goto fail;
    }
    if (init_params) {
        memcpy(tr->tm->params, init_params, n * sizeof(float));
    } else {
        float *tensors[FWM_TENSOR_COUNT];
        for (int k = 0; k < FWM_TENSOR_COUNT; k++)
            tensors[k] = tr->tm->params + tr->tm->layout.offset[k];
        fwm__model_init_weights(&options->hp, options->seed, tensors);
    }
    status = fwm__trainer_start_epoch(tr, err);
    if (status != FWM_OK)
        goto fail;
    *out = tr;
    return FWM_OK;
fail:
    fwm__trainer_free(tr);
    return status;
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
    fwm__tm_f32 *tm = tr->tm;
    fwm__tm_zero_grads_f32(tm);
    tr->last_loss = fwm__tm_forward_f32(tm, tr->x, tr->y, len);
    fwm__metrics_add(&tr->running, tm, tr->opt.qmark_id, tr->tasks);
    fwm__tm_backward_f32(tm);
    size_t n = tm->layout.total;
    double norm = tr->opt.adam.clip_norm > 0 ? fwm__grad_norm(tm->grads, n) : 0;
    tr->step++;
    fwm__adam_update(&tr->opt.adam, tr->step, norm, tm->params, tm->grads, tr->adam_m, tr->adam_v,
                     n);
    tr->window_index++;
    tr->tokens += (long)len * tr->opt.lanes;
    tr->running_loss += tr->last_loss;
    tr->running_steps++;
    return FWM_OK;
}

fwm_status fwm__trainer_evaluate(fwm__trainer *tr, fwm__qa_metrics *out, fwm_error *err)
{
    if (!tr->valid)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "no validation split");
    return fwm__evaluate(&tr->opt.hp, tr->tm->params, tr->valid, tr->pad_id, tr->eos_id,
                         tr->opt.qmark_id, &tr->opt.eval, tr->pool, out, err);
}

static fwm_status save_checkpoint(fwm__trainer *tr, fwm_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoint.bin", tr->opt.run_dir);
    return fwm__trainer_save_checkpoint(tr, path, err);
}

fwm_status fwm__trainer_run(fwm__trainer *tr, fwm_error *err)
{
    const fwm__train_options *o = &tr->opt;
    double session_start = now_seconds(), last_print = session_start;
    double seconds_before = tr->seconds;
    long step_at_start = tr->step;
    fwm_status status = FWM_OK;
    tr->stopped = 0;
    while (tr->step < o->steps) {
        if (o->stop_requested && *o->stop_requested) { /* a step boundary: stop here */
            tr->stopped = 1;
            break;
        }
        status = fwm__trainer_step(tr, err);
        if (status != FWM_OK)
            return status;
        double now = now_seconds();
        tr->seconds = seconds_before + (now - session_start);
        int last = tr->step == o->steps;
        if (o->progress_seconds > 0 && (now - last_print >= o->progress_seconds || last)) {
            double rate = (double)(tr->step - step_at_start) * o->lanes * o->window /
                          (now - session_start);
            double per_step = (now - session_start) / (double)(tr->step - step_at_start);
            fwm__progress_print(stderr, tr, rate, per_step * (double)(o->steps - tr->step));
            last_print = now;
        }
        if (o->eval_every > 0 && (tr->step % o->eval_every == 0 || last) && tr->valid) {
            status = fwm__trainer_evaluate(tr, &tr->last_valid, err);
            if (status != FWM_OK)
                return status;
            tr->has_valid = 1;
            if (o->run_dir) {
                status = fwm__log_append(o->run_dir, tr, err);
                if (status != FWM_OK)
                    return status;
                fwm__plot_curve(o->run_dir);
            }
            if (o->progress_seconds > 0)
                fwm__progress_eval_print(stderr, tr);
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
