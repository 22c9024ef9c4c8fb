/* mnm_model_decl.h - template body of mnm_model.h, included once per precision (see
 * real_template.h). No include guard on purpose. */

typedef struct TM(fwm__mnm_tm) {
    TM(fwm__tm_shell) shell;    /* first: what every architecture's model holds (tm_shell.h) */
    fwm__mnm_config config;     /* segment resolved */
    fwm_mnm_hparams hp;         /* = config.hp */
    fwm__tensor_layout layout;  /* fwm__mnm_tensor_at order */
    /* shell.state_size: per lane: h (H), c (H), r (d_v), then M^1..M^Lm row-major */
    size_t memory_size;         /* floats of M^1..M^Lm */
    size_t mem_offset[FWM_MNM_MAX_MEMORY_LAYERS]; /* layer l's matrix within M */
    size_t mem_rows[FWM_MNM_MAX_MEMORY_LAYERS], mem_cols[FWM_MNM_MAX_MEMORY_LAYERS];
    size_t act_size;            /* one key's activations: d_k + (Lm - 1) D + d_v */
    size_t u_size;              /* interaction rows: Nh (2 d_k + d_v) + d_k */
    size_t target_size;         /* targets of one head: (Lm - 1) D + d_v */
    int n_segments;

    /* ---- activations of the last forward call (rows r = t*B + b) ---- */
    real *input_table;          /* [V, 4H]: W_ih[:, :E] Emb[v] + b */
    real *gates;                /* [window*B, 4H]: i, f, z, o after their nonlinearities */
    real *hs, *cs;              /* [(window+1)*B, H]: before step 0 (rows 0..B-1), then t */
    real *rs;                   /* [(window+1)*B, d_v]: the read-out, the same way */
    real *tanh_cs;              /* [window*B, H] */
    real *us;                   /* [window*B, u_size]: interaction vectors (after tanh) */
    real *betas;                /* [window*B] */
    real *targets;              /* [window*B, Nh * target_size] */
    real *m_checkpoints;        /* [B][n_segments][memory_size]: M before steps 0, seg, 2 seg.. */
    real *metas;                /* [window*B]: m_t, 0 at padding inputs */
    long n_meta_rows;           /* positions whose input is not padding (training only) */
    real *hr_selected;          /* [window*B, H + d_v]: [h; r] of the loss rows */
    real *y_selected;           /* [window*B, d_o] */
    double meta_sum, meta;      /* meta terms: sum and mean over the non-padding positions */
    double objective;           /* loss + meta_weight * meta (own denominators) */
    long meta_denominator;      /* 0 = n_meta_rows */

    /* ---- backward scratch ---- */
    real *d_hr;                 /* [window*B, H + d_v]: gradient of [h; r] from the output */
    real *d_u;                  /* [window*B, u_size]: of u's pre-activation */
    real *d_betas;              /* [window*B]: of beta's pre-activation */
    real *d_targets;            /* [window*B, Nh * target_size] */
    real *d_gates;              /* [window*B, 4H] */
    real *d_table;              /* [V, 4H] */
    real *thread_scratch;
    size_t scratch_floats;
} TM(fwm__mnm_tm);

/* Allocate a model with zero parameters, gradients and state. FWM_ERR_INVALID_ARGUMENT (sizes, a
 * negative or non-finite meta weight), FWM_ERR_OUT_OF_MEMORY. */
fwm_status TM(fwm__mnm_tm_create)(const fwm__mnm_config *config, fwm__pool *pool,
                                  TM(fwm__mnm_tm) **out, fwm_error *err);
void TM(fwm__mnm_tm_free)(TM(fwm__mnm_tm) *tm);
/* Every lane to the reset state: h = c = r = 0 and M the initial memory of tm->shell.params. */
void TM(fwm__mnm_tm_reset_state)(TM(fwm__mnm_tm) *tm);

/* One window, as fwm__tm_forward: x and y are [B][len] lane-major; returns the mean task loss
 * (tm->objective has the meta term too). */
double TM(fwm__mnm_tm_forward)(TM(fwm__mnm_tm) *tm, const uint32_t *x, const uint32_t *y,
                               int len);

/* Gradients of the last forward call's loss_sum / loss_denominator + meta_weight * meta_sum /
 * meta_denominator, added to tm->shell.grads (truncated BPTT: nothing flows into the carried state).
 * The initial memory's gradient stays zero. */
void TM(fwm__mnm_tm_backward)(TM(fwm__mnm_tm) *tm);
