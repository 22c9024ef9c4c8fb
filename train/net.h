/* net.h - the trainer's model whichever its architecture: one handle over an architecture's own
 * model (fwm/fwm_model.h for `fwm`, lstm/lstm_model.h for `lstm`, mnm/mnm_model.h for `mnm`,
 * gfw/gfw_model.h for `gfw`, stm/stm_model.h for `stm`), in float, and the small table of
 * operations that differ between architectures (fwm__net_ops, one per architecture, a table of
 * designated initializers over net_adapter.h's functions and its own; net.c's registry lists them
 * by FWM_ARCH_LIST). The trainer,
 * evaluation, checkpoints and model files work through this handle only, so they are written once
 * for every architecture.
 *
 * Adding an architecture: its model in train/<arch>/ (both precisions, like the FWM's), its
 * <arch>_net.c beside it (a configure function, FWM__NET_TYPED_MODEL and its fwm__net_ops
 * table) and a case in
 * fwm__tensor_layout_init (param_layout.c); model_io.c's writer and reader follow FWM_ARCH_LIST.
 */
#ifndef FWM_TRAIN_NET_H
#define FWM_TRAIN_NET_H

#include <stddef.h>
#include <stdint.h>

#include "gfw_model.h"
#include "lstm_model.h"
#include "mnm_model.h"
#include "param_layout.h"
#include "stm_model.h"
#include "fwm_model.h"

typedef struct fwm__net_config {
    fwm__model_spec model;  /* architecture and its hyperparameters */
    int lanes;              /* B >= 1 */
    int window;             /* maximum tokens per lane per forward call */
    int segment;            /* fwm: F checkpoint interval of the backward pass (0 = automatic) */
    fwm__loss_mode loss_mode;
    uint32_t loss_token_id; /* QM mode: the input token at which loss is taken ("?") */
    fwm__dropout dropout;   /* lstm and fwm only (the others have none: must be 0); 0 for
                               evaluation */
    double meta_weight;     /* mnm only: the meta-objective's coefficient (others: ignored) */
    int fix_alpha;          /* stm only: hold alpha1 and alpha3 (the authors' bAbI setting) */
    int tie_embeddings;     /* lstm and fwm only: the output matrix is the embedding's */
    int train_output;       /* stm sentence mode only: train the output matrix Z (held otherwise) */
    int keep_logits;        /* keep the loss rows' logits (tests) */
    int forward_only;       /* evaluation: no gradients, no backward buffers */
} fwm__net_config;

typedef struct fwm__net fwm__net;

typedef struct fwm__net_ops {
    fwm_arch arch;
    /* Create net->impl for net->config and set net's buffer pointers, sizes and view. */
    fwm_status (*create)(fwm__net *net, fwm__pool *pool, fwm_error *err);
    void (*destroy)(void *impl);
    double (*forward)(fwm__net *net, const uint32_t *x, const uint32_t *y, int len);
    void (*backward)(fwm__net *net, long loss_denominator, long meta_denominator);
    /* Every lane to the reset state (NULL: all zero, the shell's fwm__tm_shell_zero_state). */
    void (*reset_state)(void *impl);
    /* Draw the dropout masks of training step `step` (NULL: the architecture has no dropout). */
    void (*set_dropout)(void *impl, uint64_t seed, uint64_t step, int lane_offset);
    /* The initial weights into tensors (layout order). */
    void (*init_weights)(const fwm__model_spec *spec, uint64_t seed, float *const *tensors);
    /* The checkpoint interval in use (net->segment) of a model just created (NULL: 0). */
    int (*segment)(const fwm__net *net);
    /* After each forward: what more of the typed model the handle shows (the MNM's meta sum and
     * positions); NULL: nothing more. */
    void (*view_more)(fwm__net *net);
    /* Before each backward: the meta term's denominator into the typed model (the MNM); NULL:
     * none. */
    void (*set_meta_denominator)(void *impl, long meta_denominator);
    /* 1: training takes a meta term at every position whose input is not padding (the MNM). */
    int meta_term;
    /* Where the model predicts and the loss is taken (NULL: the loss mode's rule,
     * fwm__is_loss_position). */
    int (*is_loss_position)(const fwm__net_config *config, uint32_t x, uint32_t y);
} fwm__net_ops;

struct fwm__net {
    const fwm__net_ops *ops;
    fwm__net_config config;
    void *impl;                  /* fwm__tm_f32 (fwm), fwm__lstm_tm_f32 (lstm), fwm__mnm_tm_f32,
                                    fwm__gfw_tm_f32, fwm__stm_tm_f32: each begins with its
                                    fwm__tm_shell_f32 (tm_shell.h) */
    fwm__tensor_layout layout;   /* the flat buffers' tensors */
    float *params, *grads;       /* [layout.total] (grads NULL when forward_only) */
    float *state;                /* [lanes][state_size]: carried across calls */
    size_t state_size;           /* floats per lane (fwm: h, c, F; lstm: h, c of every layer;
                                    mnm: h, c, r, M; gfw: h_F, h_S, F1, F2;
                                    stm: Mi, Mr, in sentence mode the buffer's P word ids, its
                                    length and the answer-slot flag as floats) */
    int segment;                 /* fwm, mnm, stm: the checkpoint interval in use; 0 for others */
    /* the last forward call (rows r = t * lanes + b): */
    int len;
    const uint32_t *x, *y;       /* [len * lanes] */
    int n_loss_rows;
    const int *loss_rows;        /* [n_loss_rows], increasing */
    const float *probs;          /* [n_loss_rows][V]: softmax of the loss rows (until backward) */
    const float *logits;         /* the same before the softmax, with keep_logits; else NULL */
    double loss_sum, loss;       /* sum and mean cross entropy over the loss rows */
    double meta_sum;             /* mnm training: the sum of the meta terms (others 0) */
    long n_meta_rows;            /* mnm training: the positions it is taken at (others 0) */
};

/* FWM_ERR_INVALID_ARGUMENT (sizes, dropout for an architecture without it, an unknown
 * architecture), FWM_ERR_OUT_OF_MEMORY. `pool` is borrowed. */
fwm_status fwm__net_create(const fwm__net_config *config, fwm__pool *pool, fwm__net **out,
                           fwm_error *err);
void fwm__net_free(fwm__net *net);

/* As fwm__tm_forward / fwm__tm_backward (fwm/fwm_model.h) for any architecture; backward takes the
 * gradient of loss_sum / loss_denominator (0: n_loss_rows). */
double fwm__net_forward(fwm__net *net, const uint32_t *x, const uint32_t *y, int len);
/* Whether every id of a window x, y [lanes][len] (lane-major, as fwm__net_forward takes them; all
 * of a run's lanes, which may span several nets of one model) is below the model's vocabulary
 * size: FWM_ERR_INVALID_ARGUMENT naming the first that is not, its lane, position and V. The
 * forward pass indexes tables by these ids unchecked: every window goes through this first (the
 * trainer's and the evaluation's, where they build them). */
fwm_status fwm__net_check_ids(const fwm__net *net, const uint32_t *x, const uint32_t *y, int lanes,
                              int len, fwm_error *err);
void fwm__net_backward(fwm__net *net, long loss_denominator);
/* The same with the meta-objective's denominator too (mnm: the positions of all lane groups whose
 * input is not padding, fwm__net_count_meta_rows; 0: this model's own). */
void fwm__net_backward_meta(fwm__net *net, long loss_denominator, long meta_denominator);
/* The positions of x [n] at which the meta-objective is taken (mnm training; 0 for the others). */
long fwm__net_count_meta_rows(const fwm__net *net, const uint32_t *x, size_t n);
void fwm__net_zero_grads(fwm__net *net);
void fwm__net_reset_state(fwm__net *net);
/* Reset the lanes b with flags[b] set to the reset state, the others kept (the standard bAbI
 * protocol: a lane starts a new sample). scratch: [lanes * state_size] floats of the caller's. */
void fwm__net_reset_lanes(fwm__net *net, const uint8_t *flags, float *scratch);
/* The dropout masks of training step `step` of a run seeded `seed`; lane b of this model is lane
 * lane_offset + b of the run. A no-op for architectures or configurations without dropout. */
void fwm__net_set_dropout(fwm__net *net, uint64_t seed, uint64_t step, int lane_offset);
/* Initial weights for `seed` into net->params (fwm-init's for the same seed and sizes). The lane
 * state is not touched: fwm__net_reset_state after the parameters are set (the MNM's reset state
 * holds its initial memory). */
void fwm__net_init_weights(fwm__net *net, uint64_t seed);

/* The loss rule of this model's architecture (its ops' is_loss_position, else the loss mode's
 * fwm__is_loss_position; an STM in sentence mode predicts at question ends only). */
int fwm__net_is_loss_position(const fwm__net *net, uint32_t x, uint32_t y);

#endif
