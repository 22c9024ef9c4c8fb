/* evaluate.h - run a model over a whole catbAbI split (forward only) and collect the metrics at
 * "?" positions (or, for a sequence-to-sequence split, at every target). The split's samples are
 * shuffled once with a fixed seed, laid into `lanes` lanes and walked in windows with the state
 * carried from a zero start (the paper's protocol: valid with many lanes, test with one lane over
 * the whole stream). */
#ifndef FWM_TRAIN_EVALUATE_H
#define FWM_TRAIN_EVALUATE_H

#include <stdint.h>

#include "catbabi_stream.h"
#include "metrics.h"
#include "param_layout.h"
#include "thread_pool.h"

/* The fixed seed of the valid/test order (fwm__rng stream 0 of it). */
#define FWM__EVAL_ORDER_SEED 20210507u

typedef struct fwm__eval_options {
    int lanes;        /* B; 1 for the paper's test protocol */
    int window;       /* steps per forward call (does not change the result) */
    long max_windows; /* stop after this many windows; 0 = the whole split */
    int reset_per_sample; /* the standard bAbI protocol: each sample (of a split built by
                             fwm__catbabi_standard_split) from the reset state, laid at window
                             boundaries in its stored order (fwm__catbabi_stream_build_aligned) */
} fwm__eval_options;

/* params: a flat buffer in the layout of `model` (fwm__tensor_layout). ids: pad, eos, "?". Never
 * drops (the model is created without dropout). */
fwm_status fwm__evaluate(const fwm__model_spec *model, const float *params,
                         const fwm__catbabi_split *split,
                         uint32_t pad_id, uint32_t eos_id, uint32_t qmark_id,
                         const fwm__eval_options *options, fwm__pool *pool,
                         fwm__qa_metrics *out, fwm_error *err);

/* A sequence-to-sequence split (split->targets, e.g. ar_task.h): loss and metrics at every
 * position whose input is not pad_id, which is also the blank target of the partial metrics. The
 * split is walked as it is (its samples in their stored order). */
fwm_status fwm__evaluate_seq(const fwm__model_spec *model, const float *params,
                             const fwm__catbabi_split *split, uint32_t pad_id,
                             const fwm__eval_options *options, fwm__pool *pool,
                             fwm__seq_metrics *out, fwm_error *err);

#endif
