/* trainer.h - the training loop: truncated BPTT over the lanes of a shuffled catbAbI stream, Adam,
 * periodic evaluation, progress, CSV log, checkpoints.
 *
 * One step = one window of `window` tokens in each of B lanes: forward, backward, optimiser. The
 * training samples are shuffled at the start of every epoch (fwm__rng stream 1 + epoch of the
 * seed, without replacement) and the lane state carries across windows and epochs. Everything the
 * next step depends on (parameters, Adam moments, epoch and window, lane states) is in the
 * checkpoint, so a resumed run computes the same numbers as an uninterrupted one (for the same
 * thread count).
 *
 * Lane groups and processes: the B lanes can be trained as G groups (contiguous lanes, sizes
 * differing by at most one), each a separate forward and backward pass whose gradient is kept
 * apart; the step's gradient is then the sum of the group gradients in group order. Under mpirun
 * (distributed.h) the groups are split over the processes, which exchange the group gradients
 * (every process receives all of them) and each add them up in that same order, so N processes
 * compute bit for bit what one process computes with the same G (and --threads per process).
 * G = 1 (the default of a single process) is the plain path. Only rank 0 evaluates, prints, and
 * writes files; all ranks keep the same parameters and Adam moments.
 */
#ifndef FWM_TRAIN_TRAINER_H
#define FWM_TRAIN_TRAINER_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "adam.h"
#include "catbabi_stream.h"
#include "distributed.h"
#include "divergence.h"
#include "evaluate.h"
#include "metrics.h"
#include "net.h"

/* The random stream of --embedding-init's draw. */
#define FWM__EMBEDDING_INIT_STREAM 0x656d62u

typedef struct fwm__train_options {
    fwm_arch arch;          /* FWM_ARCH_FWM (0, the default), FWM_ARCH_LSTM, FWM_ARCH_MNM,
                               FWM_ARCH_GFW or FWM_ARCH_STM */
    fwm_hparams hp;          /* arch fwm, complete: sizes, vocabulary size, ids, read policy,
                                constants */
    fwm_lstm_hparams lstm;   /* arch lstm, complete */
    fwm__dropout dropout;    /* arch lstm: AWD-style dropout (lstm_model.h); 0 = none */
    fwm_mnm_hparams mnm;     /* arch mnm, complete */
    double meta_weight;      /* arch mnm: the meta-objective's coefficient (docs/MODEL.md) */
    fwm_gfw_hparams gfw;     /* arch gfw, complete */
    fwm_stm_hparams stm;     /* arch stm, complete */
    int stm_fix_alpha;       /* arch stm: hold alpha1 and alpha3 (the authors' bAbI setting) */
    int tie_embeddings;      /* arch lstm and fwm: --tie-embeddings (W_s = Emb, H == E) */
    double embedding_init;   /* > 0: --embedding-init X, the embedding drawn from U(-X, X) (fwm__rng
                                stream FWM__EMBEDDING_INIT_STREAM of the seed) instead of the
                                architecture's own draw; 0: the architecture's */
    int stm_train_output;    /* arch stm, sentence mode: train the output matrix Z */
    int max_nonfinite;       /* a step whose loss or gradient is not finite is skipped (the lane
                                state goes back to before it, no update); after this many in a
                                row the run stops with an error (0: at the first) */
    long fault_nan_step;     /* tests: the gradient of this step (1-based) is made NaN, once;
                                0 = never */
    fwm__loss_mode mode;     /* LM or QM; INPUT for a sequence-to-sequence task (the splits have
                                targets, ar_task.h: their metrics are at every target) */
    uint32_t qmark_id;       /* "?": QM loss positions and the accuracy metric */
    int report_perplexity;   /* --task text: progress and evaluation lines give the perplexity
                                over every target (the split's targets) */
    int reset_per_sample;    /* the standard bAbI protocol: every sample starts at a window
                                boundary of its lane, from the reset state
                                (fwm__catbabi_stream_build_aligned); 0: catbAbI's carried state */
    int lanes;               /* B, paper 32 */
    int window;              /* truncated-BPTT length, paper 200 */
    int segment;             /* F checkpoint interval in the backward pass; 0 = automatic */
    fwm__adam_params adam;
    long steps;              /* train until this many steps are done */
    uint64_t seed;           /* initialisation (fwm__net_init_weights), shuffling, dropout */
    int threads;             /* >= 1, per process */
    int lane_groups;         /* G (see above); 0 = one group per process (1 without mpirun) */
    const fwm__dist *dist;   /* the run's processes (borrowed); NULL = one process */
    long eval_every;         /* evaluate on the valid split every this many steps; 0 = never */
    fwm__eval_options eval;  /* lanes, window, max_windows of that evaluation */
    long checkpoint_every;   /* write <run_dir>/checkpoint.bin every this many steps; 0 = never */
    const char *run_dir;     /* checkpoints, log.csv, curve.gp / curve.png; NULL = none */
    double progress_seconds; /* a progress line on stderr every this many seconds; 0 = quiet */
    /* When non-NULL and nonzero (set by a signal handler), fwm__trainer_run stops at the next step
     * boundary, writes the checkpoint and returns FWM_OK with trainer->stopped set. */
    const volatile sig_atomic_t *stop_requested;
} fwm__train_options;

typedef struct fwm__trainer {
    fwm__train_options opt;
    const fwm__catbabi_split *train, *valid;
    uint32_t pad_id, eos_id;
    uint64_t data_hash;       /* of the training split: a checkpoint must match it */
    fwm__pool *pool;
    fwm__model_spec spec;     /* the architecture and hyperparameters trained */
    fwm__net *net;            /* = group_net[0]: its parameters and gradients are the step's */
    fwm__tm_f32 *tm;          /* arch fwm: net's FWM model (NULL for other architectures) */
    const fwm__dist *dist;    /* never NULL (single_process when opt.dist is) */
    fwm__dist single_process;
    int n_groups;             /* G */
    int *group_lane;          /* [G + 1]: first lane of each group, then B */
    int group_begin, group_end; /* the groups this process trains, [begin, end) */
    fwm__net **group_net;     /* [end - begin]: one model per group (parameters copied from net) */
    float *group_grads;       /* [G][layout.total] when G > 1: every group's gradient */
    struct fwm__group_stats *group_stats; /* [G] when G > 1: loss and "?" metrics per group */
    float *adam_m, *adam_v;   /* [layout.total] */
    long step;                /* steps done */
    long epoch;               /* epoch of the next window */
    size_t window_index;      /* next window within the epoch */
    long tokens;              /* lane positions processed */
    double seconds;           /* training time so far, all sessions */
    fwm__catbabi_stream stream; /* the current epoch's lanes */
    uint32_t *order;
    uint32_t *x, *y;          /* [B][window] */
    uint8_t *tasks;
    fwm__qa_metrics running;  /* training "?" metrics since the last evaluation */
    double running_loss;      /* sum of step losses since the last evaluation */
    long running_steps;
    fwm__qa_metrics last_valid;
    int has_valid;
    double last_loss;
    double last_meta;         /* arch mnm: the last step's mean meta term */
    long skipped_steps;       /* windows skipped for a non-finite loss or gradient, this session */
    fwm__divergence divergence; /* notices a loss climbing or accuracy falling (this session) */
    int nonfinite_in_row;
    float *state_before;      /* [B * state_size]: the lanes' state before the step */
    int stopped;              /* fwm__trainer_run returned early on stop_requested */
    uint8_t *reset_flags;     /* [B]: lanes starting a sample in this window (reset_per_sample) */
    float *reset_scratch;     /* [B * state_size] for fwm__net_reset_lanes */
    fwm__seq_metrics last_valid_seq; /* a sequence-to-sequence task's (train->targets) last
                                        validation; last_valid holds its answers' part */
} fwm__trainer;

/* Set up training from step 0: parameters from `init_params` (flat, layout order) or, when NULL,
 * the architecture's initialiser (fwm__net_init_weights) for `seed`. `valid` may be NULL (no
 * evaluation). The splits are borrowed. FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__trainer_create(const fwm__train_options *options, const fwm__catbabi_split *train,
                               const fwm__catbabi_split *valid, uint32_t pad_id, uint32_t eos_id,
                               const float *init_params, fwm__trainer **out, fwm_error *err);
void fwm__trainer_free(fwm__trainer *trainer);

/* One window: forward, backward, Adam. */
fwm_status fwm__trainer_step(fwm__trainer *trainer, fwm_error *err);

/* Steps until opt.steps, with evaluation, logging, progress and checkpoints as configured. A
 * checkpoint is also written at the end when run_dir is set, and when opt.stop_requested ends the
 * run early (at a step boundary: the checkpoint resumes exactly there). */
fwm_status fwm__trainer_run(fwm__trainer *trainer, fwm_error *err);

/* Evaluate the current parameters on the valid split (opt.eval) into *out (a sequence-to-sequence
 * split: its answers, the targets that are not the blank; every metric in last_valid_seq). */
fwm_status fwm__trainer_evaluate(fwm__trainer *trainer, fwm__qa_metrics *out, fwm_error *err);

/* Checkpoints (checkpoint.c): everything the next step depends on, written atomically. Loading
 * checks that sizes, mode, lanes, window, seed and the training data match this trainer.
 * Both are collective: rank 0 gathers the lane states and writes the file, or reads it and sends
 * its contents to every rank; every rank returns the same status.
 * FWM_ERR_IO, FWM_ERR_FORMAT (names what differs), FWM_ERR_CHECKSUM. */
fwm_status fwm__trainer_save_checkpoint(const fwm__trainer *trainer, const char *path,
                                        fwm_error *err);
fwm_status fwm__trainer_load_checkpoint(fwm__trainer *trainer, const char *path, fwm_error *err);

/* The first tensor of `layout` in `values` (flat) that holds a NaN or an infinity, or -1. */
long fwm__first_nonfinite(const fwm__tensor_layout *layout, const float *values);

/* Whether this process is rank 0 (the one that evaluates, prints and writes files). */
int fwm__trainer_is_root(const fwm__trainer *trainer);

/* Collective: the state of every lane (the FWM's h, c, F; the LSTM's h, c of every layer; the
 * MNM's h, c, r, M; the gfw model's h_F, h_S, F1, F2; the STM's Mi, Mr and sentence buffer;
 * [lanes][state_size]) into all_state, on
 * rank 0 (other ranks' buffers get only their own lanes). */
void fwm__trainer_gather_state(const fwm__trainer *trainer, float *all_state);
/* Set this process's lanes' state from all_state ([lanes][state_size]). */
void fwm__trainer_set_state(fwm__trainer *trainer, const float *all_state);
/* Copy net's parameters into the other groups' models (after net->params changed). */
void fwm__trainer_sync_params(fwm__trainer *trainer);

/* Build the lanes of the epoch trainer->epoch (internal to trainer.c and checkpoint.c). */
fwm_status fwm__trainer_start_epoch(fwm__trainer *trainer, fwm_error *err);

#endif
