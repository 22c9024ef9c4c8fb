/* tm_shell.h - what every architecture's trainer model holds alike, once: the flat parameters and
 * gradients, the lanes' carried state, the last forward call's tokens, loss rows, probabilities and
 * loss, and the thread pool; with the functions over it that are the same for every architecture
 * (allocate and free those buffers, zero the gradients, zero the state).
 *
 * Every typed model (fwm__tm_f32, fwm__lstm_tm_f32, ...) begins with its shell (member `shell`), so
 * a pointer to a model is a pointer to its shell: the trainer's handle (net.c) zeroes gradients
 * and state, and reads the buffers, through it whatever the architecture. An architecture whose
 * reset state is not all zero (mnm, stm) has its own reset_state; the others reset with
 * fwm__tm_shell_zero_state. Declared in two precisions from one template (tm_shell_decl.h).
 * Not for: what differs between architectures (their activations, scratch and sizes).
 */
#ifndef FWM_TRAIN_TM_SHELL_H
#define FWM_TRAIN_TM_SHELL_H

#include <stddef.h>
#include <stdint.h>

#include "thread_pool.h"

/* What a model's create gives its shell's allocation. */
typedef struct fwm__tm_shell_sizes {
    size_t param_count; /* floats of parameters (and of gradients): the model's layout.total */
    size_t lanes;       /* B >= 1 */
    size_t window;      /* most tokens per lane per forward call */
    size_t vocab_size;  /* columns of the probabilities (and logits) of a row */
    int forward_only;   /* no gradients */
    int keep_logits;    /* also keep the loss rows' logits */
} fwm__tm_shell_sizes;

/* The sizes of a model's shell from its config (every architecture's has lanes, window,
 * forward_only and keep_logits), its parameter count and its vocabulary size. */
#define FWM__TM_SHELL_SIZES(config, params, vocab)                                                   \
    ((fwm__tm_shell_sizes){.param_count = (params),                                                \
                           .lanes = (size_t)(config)->lanes,                                       \
                           .window = (size_t)(config)->window,                                     \
                           .vocab_size = (vocab),                                                  \
                           .forward_only = (config)->forward_only,                                 \
                           .keep_logits = (config)->keep_logits})

#define FWM_REAL_DOUBLE 0
#include "real_template.h"
#include "tm_shell_decl.h"
#undef FWM_REAL_DOUBLE
#define FWM_REAL_DOUBLE 1
#include "real_template.h"
#include "tm_shell_decl.h"
#undef FWM_REAL_DOUBLE

#endif
