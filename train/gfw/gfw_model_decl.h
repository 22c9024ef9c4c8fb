/* gfw_model_decl.h - template body of gfw_model.h, included once per precision (see
 * real_template.h). No include guard on purpose. */

typedef struct TM(fwm__gfw_tm) {
    TM(fwm__tm_shell) shell;    /* first: what every architecture's model holds (tm_shell.h) */
    fwm__gfw_config config;
    fwm_gfw_hparams hp;         /* = config.hp */
    fwm__tensor_layout layout;  /* fwm__gfw_tensor_at order */
    size_t c1, c2;              /* columns of F1 (m + E + 1) and F2 (m + 1) */
    size_t update_size;         /* U1 + U2: the slow outputs that update F1 and F2 */
    size_t fast_size;           /* floats of F1 and F2: m (c1 + c2) */
    /* shell.state_size: per lane: h_F (m), h_S (N), F1 (m c1), F2 (m c2) */

    /* ---- activations of the last forward call (rows r = t*B + b) ---- */
    real *slow_table;           /* [V, P]: W_1[:, N:] Emb[v] + b_1 */
    real *hss;                  /* [(window+1)*B, N]: h_S before step 0 (rows 0..B-1), then t */
    real *ss;                   /* [window*B, P]: s after its tanh */
    real *updates;              /* [window*B, U1+U2]: tanh(alpha), tanh(beta), sigma(gamma),
                                   sigma(delta) of F1, then of F2 */
    real *hfs;                  /* [(window+1)*B, m]: h_F before step 0, then after step t */
    real *u1s, *as, *u2s;       /* [window*B, m]: tanh(F1 x1), a = LN(u1), tanh(F2 [a; 1]) */
    real *rstd1, *rstd2;        /* [window*B]: 1/sqrt(var + eps) of the two layer norms */
    real *fasts;                /* [window*B, fast_size]: F1, F2 as step t used them (training) */
    real *h_selected;           /* [window*B, m]: h_F of the loss rows */

    /* ---- backward scratch ---- */
    real *d_hf;                 /* [window*B, m]: gradient of h_F from the output */
    real *d_updates;            /* [window*B, U1+U2]: of the update vectors' pre-activations */
    real *d_e;                  /* [window*B, E]: of the fast net's input e */
    real *d_z;                  /* [window*B, N]: of z (h_S's pre-activation) */
    real *d_ss;                 /* [window*B, P]: of s, then of its pre-activation */
    real *d_table;              /* [V, P] */
    real *thread_scratch;
    size_t scratch_floats;
} TM(fwm__gfw_tm);

/* Allocate a model with zero parameters, gradients and state. FWM_ERR_INVALID_ARGUMENT (sizes),
 * FWM_ERR_OUT_OF_MEMORY. */
fwm_status TM(fwm__gfw_tm_create)(const fwm__gfw_config *config, fwm__pool *pool,
                                  TM(fwm__gfw_tm) **out, fwm_error *err);
void TM(fwm__gfw_tm_free)(TM(fwm__gfw_tm) *tm);

/* One window, as fwm__tm_forward: x and y are [B][len] lane-major; returns the mean loss. */
double TM(fwm__gfw_tm_forward)(TM(fwm__gfw_tm) *tm, const uint32_t *x, const uint32_t *y,
                               int len);

/* Gradients of the last forward call's loss_sum / loss_denominator, added to tm->shell.grads (truncated
 * BPTT: nothing flows into the carried state). */
void TM(fwm__gfw_tm_backward)(TM(fwm__gfw_tm) *tm);
