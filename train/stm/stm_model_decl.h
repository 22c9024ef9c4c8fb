/* stm_model_decl.h - template body of stm_model.h, included once per precision (see
 * real_template.h). No include guard on purpose. */

typedef struct TM(fwm__stm_tm) {
    TM(fwm__tm_shell) shell;    /* first: what every architecture's model holds (tm_shell.h) */
    fwm__stm_config config;
    fwm_stm_hparams hp;         /* = config.hp */
    fwm__tensor_layout layout;  /* fwm__stm_tensor_at order */
    int sentence;               /* input_mode == FWM_STM_INPUT_SENTENCE */
    size_t mem_floats;          /* d^2 (1 + n_q): Mi then Mr */
    /* shell.state_size: per lane: Mi, Mr, then (sentence mode) the P buffered word ids,
                                   the buffer's length and the answer-slot flag, as floats */
    fwm__stm_offsets off;       /* records and scratch (act_total, head_total, scratch_total) */
    int segment;                /* core steps per snapshot segment */
    int max_segments;           /* snapshots per lane */

    /* ---- the last forward call (rows r = t*B + b) ---- */
    uint8_t *act;               /* [window*B]: FWM__STM_ACT_* bits of each token */
    uint32_t *words;            /* [window*B][P] (sentence mode): the sentence a step or answer
                                   encodes */
    uint16_t *n_words;          /* [window*B] */
    int *loss_index;            /* [window*B]: the row's index among the loss rows, or -1 */
    real *heads;                /* [window*B][off.head_total]: the loss rows' head activations */
    real *snapshots;            /* [B][max_segments][mem_floats] (training) */
    int *segment_start;         /* [B][max_segments]: the token where each segment starts */
    int *n_segments;            /* [B] */

    /* ---- per-thread scratch ---- */
    real *thread_acts;          /* [threads][segment][off.act_total] */
    real *thread_scratch;       /* [threads][off.scratch_total] */
    int *thread_source;         /* [threads][window]: the step whose Mr a prediction reads */
    real *thread_grads;         /* [threads][layout.total] (training) */
} TM(fwm__stm_tm);

/* Allocate a model with zero parameters, gradients and state. FWM_ERR_INVALID_ARGUMENT (sizes),
 * FWM_ERR_OUT_OF_MEMORY. */
fwm_status TM(fwm__stm_tm_create)(const fwm__stm_config *config, fwm__pool *pool,
                                  TM(fwm__stm_tm) **out, fwm_error *err);
void TM(fwm__stm_tm_free)(TM(fwm__stm_tm) *tm);
/* Every lane to the reset state: the initial memories (from the parameters), an empty buffer, a
 * closed slot. */
void TM(fwm__stm_tm_reset_state)(TM(fwm__stm_tm) *tm);

/* One window, as fwm__tm_forward: x and y are [B][len] lane-major; returns the mean loss. */
double TM(fwm__stm_tm_forward)(TM(fwm__stm_tm) *tm, const uint32_t *x, const uint32_t *y,
                               int len);

/* Gradients of the last forward call's loss_sum / loss_denominator, added to tm->shell.grads. */
void TM(fwm__stm_tm_backward)(TM(fwm__stm_tm) *tm);
