/* lstm_model_decl.h - template body of lstm_model.h, included once per precision (see
 * real_template.h). No include guard on purpose. */

typedef struct TM(fwm__lstm_tm) {
    TM(fwm__tm_shell) shell;    /* first: what every architecture's model holds (tm_shell.h) */
    fwm__lstm_config config;
    fwm_lstm_hparams hp;        /* = config.hp */
    fwm__tensor_layout layout;  /* fwm__lstm_tensor_at order */
    /* shell.state_size: per lane: 2 L H; layer l's h at l H, its c at L H + l H (as
                                   the runtime's sessions) */
    int use_table;              /* layer 0 reads the [V, 4H] input table (no embedding dropout) */

    /* ---- activations of the last forward call (rows r = t*B + b) ---- */
    real *input_table;          /* [V, 4H]: W_ih^0 Emb'[v] + b^0 (use_table) */
    real *emb_dropped;          /* [V, E]: Emb with the token mask (token dropout) */
    real *in0;                  /* [window*B, E]: layer 0's input rows (!use_table) */
    real *ins;                  /* [L-1][window*B, H]: the input of layer l >= 1 at slot l-1 */
    real *gates;                /* [L][window*B, 4H]: i, f, z, o after their nonlinearities */
    real *hs, *cs;              /* [L][(window+1)*B, H]: before step 0 (rows 0..B-1), then t */
    real *tanh_cs;              /* [L][window*B, H] */
    real *y_selected;           /* [window*B, H]: y_{L-1} of the loss rows */

    /* ---- dropout masks of the current window (scaled by 1/(1-p) where kept) ---- */
    real *mask_token;           /* [V] */
    real *mask_embedding;       /* [B][E] */
    real *mask_layer;           /* [L-1][B][H]: on the input of layer l at slot l-1 */
    real *mask_hh;              /* [L][4H*H] */
    real *w_hh_dropped;         /* [L][4H*H]: W_hh with its mask (recurrent dropout) */

    /* ---- backward scratch ---- */
    real *d_gates;              /* [window*B, 4H] (one layer at a time) */
    real *d_y;                  /* [window*B, H]: gradient of the current layer's output */
    real *d_in;                 /* [max(window*B, V), max(E, H)]: of the current layer's input */
    real *d_table;              /* [V, 4H] */
    real *d_w;                  /* [4H, H]: W_hh's gradient before its mask */
    real *thread_scratch;
    size_t scratch_floats;
} TM(fwm__lstm_tm);

/* Allocate a model with zero parameters, gradients and state; masks for (seed 0, step 0, lane 0).
 * FWM_ERR_INVALID_ARGUMENT (sizes, dropout outside [0, 1)), FWM_ERR_OUT_OF_MEMORY. */
fwm_status TM(fwm__lstm_tm_create)(const fwm__lstm_config *config, fwm__pool *pool,
                                   TM(fwm__lstm_tm) **out, fwm_error *err);
void TM(fwm__lstm_tm_free)(TM(fwm__lstm_tm) *tm);

/* Draw the dropout masks of the next forward calls: training step `step` (0 for the first) of a
 * run seeded `seed`, this model's lane b being lane `lane_offset + b` of the run. A no-op without
 * dropout. */
void TM(fwm__lstm_tm_set_dropout)(TM(fwm__lstm_tm) *tm, uint64_t seed, uint64_t step,
                                  int lane_offset);

/* One window, as fwm__tm_forward: x and y are [B][len] lane-major; returns the mean loss. */
double TM(fwm__lstm_tm_forward)(TM(fwm__lstm_tm) *tm, const uint32_t *x, const uint32_t *y,
                                int len);

/* Gradients of the last forward call's loss_sum / denominator, added to tm->shell.grads (truncated BPTT). */
void TM(fwm__lstm_tm_backward)(TM(fwm__lstm_tm) *tm);
