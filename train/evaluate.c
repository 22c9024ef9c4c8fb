/* evaluate.c - forward-only pass over a split with metrics at "?", or a sequence-to-sequence
 * split's metrics at every target (see evaluate.h). */
#include "evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "babi_standard.h"
#include "fwm_error.h"

/* One of out (catbAbI: at "?") and seq_out (a split with targets: every non-padding input). */
static fwm_status evaluate(const fwm__model_spec *model, const float *params,
                           const fwm__catbabi_split *split, uint32_t pad_id, uint32_t eos_id,
                           uint32_t qmark_id, const fwm__eval_options *options, fwm__pool *pool,
                           fwm__qa_metrics *out, fwm__seq_metrics *seq_out, fwm_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (seq_out)
        memset(seq_out, 0, sizeof *seq_out);
    fwm__net_config config;
    memset(&config, 0, sizeof config);
    config.model = *model;
    config.lanes = options->lanes;
    config.window = options->window;
    config.loss_mode = seq_out ? FWM__LOSS_INPUT : FWM__LOSS_QM;
    config.loss_token_id = qmark_id;
    config.forward_only = 1;
    fwm__net *tm = NULL;
    fwm__catbabi_stream stream = {0};
    uint32_t *order = NULL, *x = NULL, *y = NULL;
    uint8_t *tasks = NULL, *flags = NULL;
    float *scratch = NULL;
    fwm_status status = fwm__net_create(&config, pool, &tm, err);
    if (status != FWM_OK)
        goto fail;
    memcpy(tm->params, params, tm->layout.total * sizeof(float));
    fwm__net_reset_state(tm); /* the MNM's reset state holds its initial memory */
    order = malloc((split->n_samples ? split->n_samples : 1) * sizeof *order);
    size_t cells = (size_t)options->lanes * (size_t)options->window;
    x = malloc(cells * sizeof *x);
    y = malloc(cells * sizeof *y);
    tasks = malloc(cells);
    if (!order || !x || !y || !tasks) {
        status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "evaluation: out of memory");
        goto fail;
    }
    fwm__shuffle_order(order, split->n_samples, FWM__EVAL_ORDER_SEED, 0);
    if (options->reset_per_sample) {
        flags = calloc((size_t)options->lanes, 1);
        scratch = malloc((size_t)options->lanes * tm->state_size * sizeof(float));
        if (!flags || !scratch) {
            status = fwm__error(err, FWM_ERR_OUT_OF_MEMORY, "evaluation: out of memory");
            goto fail;
        }
        status = fwm__catbabi_stream_build_aligned(&stream, split, NULL, eos_id, pad_id,
                                                   options->lanes, options->window, err);
    } else {
        status = fwm__catbabi_stream_build(&stream, split, seq_out ? NULL : order, eos_id,
                                           options->lanes, err);
    }
    if (status != FWM_OK)
        goto fail;
    size_t windows = fwm__catbabi_window_count(&stream, options->window);
    if (options->max_windows > 0 && (size_t)options->max_windows < windows)
        windows = (size_t)options->max_windows;
    for (size_t w = 0; w < windows; w++) {
        size_t start = w * (size_t)options->window;
        size_t left = stream.lane_length - start;
        int len = left < (size_t)options->window ? (int)left : options->window;
        fwm__catbabi_window(&stream, start, len, pad_id, x, y, tasks);
        status = fwm__net_check_ids(tm, x, y, options->lanes, len, err);
        if (status != FWM_OK)
            goto fail;
        if (flags) { /* lanes that start a sample here start from the reset state */
            fwm__catbabi_sample_starts(&stream, start, flags);
            fwm__net_reset_lanes(tm, flags, scratch);
        }
        fwm__net_forward(tm, x, y, len);
        if (seq_out)
            fwm__seq_metrics_add(seq_out, tm, pad_id);
        else
            fwm__metrics_add(out, tm, qmark_id, tasks);
    }
fail:
    fwm__catbabi_stream_release(&stream);
    free(order);
    free(x);
    free(y);
    free(tasks);
    free(flags);
    free(scratch);
    fwm__net_free(tm);
    return status;
}

fwm_status fwm__evaluate(const fwm__model_spec *model, const float *params,
                         const fwm__catbabi_split *split,
                         uint32_t pad_id, uint32_t eos_id, uint32_t qmark_id,
                         const fwm__eval_options *options, fwm__pool *pool,
                         fwm__qa_metrics *out, fwm_error *err)
{
    if (split->targets)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "a sequence-to-sequence split is evaluated by fwm__evaluate_seq");
    return evaluate(model, params, split, pad_id, eos_id, qmark_id, options, pool, out, NULL, err);
}

fwm_status fwm__evaluate_seq(const fwm__model_spec *model, const float *params,
                             const fwm__catbabi_split *split, uint32_t pad_id,
                             const fwm__eval_options *options, fwm__pool *pool,
                             fwm__seq_metrics *out, fwm_error *err)
{
    if (!split->targets)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT,
                          "fwm__evaluate_seq needs a split with targets");
    return evaluate(model, params, split, pad_id, pad_id, pad_id, options, pool, NULL, out, err);
}
