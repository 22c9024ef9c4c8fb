/* fwm_model_decl.h - template body of fwm_model.h, included once per precision (see
 * real_template.h). No include guard on purpose. */

typedef struct TM(fwm__tm) {
    TM(fwm__tm_shell) shell;    /* first: what every architecture's model holds (tm_shell.h) */
    fwm__tm_config config;
    fwm_hparams hp;             /* = config.hp */
    fwm__param_layout layout;
    int n_segments;             /* F checkpoints per lane per window: ceil(window / segment) */
    size_t memory_size;         /* S*R*T */
    /* shell.state_size: per lane: 2H + S*R*T (h, c, F), then a stacked FWM's lower
                                   layers' h (L-1)H and c (L-1)H, as the runtime's sessions */
    size_t lower;               /* L - 1: a stacked FWM's LSTM layers below the FWM's own */
    size_t lower_offset;        /* per lane: where the lower layers' h start (2H + S*R*T); layer
                                   l's h at lower_offset + l H, its c at lower_offset + (L-1+l) H */

    /* ---- activations of the last forward call (rows r = t*B + b) ---- */
    uint8_t *read_mask;         /* [window*B] 1 where the memory is read: the read policy allows
                                   it and the row has loss (elsewhere the read-out is unused) */
    real *input_table;          /* [V, 4H]: W_ih Emb[v] + b for every token v (a stacked FWM:
                                   its lowest layer's W_ih^0 Emb[v] + b^0) */
    real *lower_gates;          /* [L-1][window*B, 4H]: the lower layers' gates, as `gates` */
    real *lower_hs, *lower_cs;  /* [L-1][(window+1)*B, H]: as `hs` and `cs` */
    real *lower_tanh_cs;        /* [L-1][window*B, H] */

    /* ---- dropout (config.dropout): the masks of the current window, 1/(1-p) where kept; the LSTM
     * layers are numbered 0 .. L-1 bottom up, L-1 the FWM's own ---- */
    int use_table;              /* the lowest layer reads input_table (no embedding dropout) */
    real *emb_dropped;          /* [V, E]: Emb with the token mask */
    real *mask_token;           /* [V] */
    real *mask_embedding;       /* [B][E] */
    real *in0;                  /* [window*B, E]: the lowest layer's input rows (!use_table) */
    real *mask_layer;           /* [L-1][B][H]: on the input of layer l >= 1 at slot l-1 */
    real *ins;                  /* [L-1][window*B, H]: that input with its mask (mask_layer) */
    real *mask_hh;              /* [L][4H*H] */
    real *w_hh_dropped;         /* [L][4H*H]: each layer's W_hh with its mask */
    real *d_w;                  /* [4H, H]: a W_hh's gradient before its mask */
    real *d_emb;                /* [max(window*B, V), E]: of the lowest layer's input */
    real *gates;                /* [window*B, 4H]: i, f, z, o after their nonlinearities */
    real *hs;                   /* [(window+1)*B, H]: h before step 0 (row 0..B-1), then h_t */
    real *cs;                   /* [(window+1)*B, H]: same for c */
    real *tanh_cs;              /* [window*B, H]: tanh(c_t) */
    real *write_act;            /* [window*B, S+R+T+1]: k1, k2, v, beta */
    real *read_act;             /* [window*B, S+N_r*R]: q0, tanh(e_1..e_Nr) */
    real *v_old;                /* [window*B, T] */
    real *norms;                /* [window*B]: ||F'|| after the write */
    real *qs;                   /* [window*B, S+N_r*T]: q_0, q_1 .. q_Nr (layer-normed) */
    real *rstds;                /* [window*B, N_r]: 1/sqrt(var + eps) of each read's layer norm */
    real *ys;                   /* [window*B, H]: y = m (+ h) */
    real *f_checkpoints;        /* [B, n_segments, S*R*T]: F before steps 0, segment, 2*segment.. */
    real *y_selected;           /* [window*B, H]: ys of the loss rows */

    /* ---- backward scratch ---- */
    real *d_y;                  /* [window*B, H] */
    real *d_q;                  /* [window*B, T] gradient of the last read's q */
    real *d_write;              /* [window*B, S+R+T+1] gradient of the write pre-activation */
    real *d_read;               /* [window*B, S+N_r*R] gradient of the read pre-activation */
    real *d_h;                  /* [window*B, H] gradient of h_t from the memory and output */
    real *d_gates;              /* [window*B, 4H] gradient of the gate pre-activations (of each
                                   LSTM layer in turn) */
    real *d_lower;              /* [window*B, H] a stacked FWM: gradient of the h of the lower
                                   layer being walked back, from the layer above */
    real *d_input_table;        /* [V, 4H] */
    real *thread_scratch;       /* per thread: scratch_floats each */
    size_t scratch_floats;
} TM(fwm__tm);

/* Allocate a model with zero parameters, gradients and state. `pool` is borrowed (NULL: one
 * thread). FWM_ERR_INVALID_ARGUMENT (sizes), FWM_ERR_OUT_OF_MEMORY. */
fwm_status TM(fwm__tm_create)(const fwm__tm_config *config, fwm__pool *pool, TM(fwm__tm) **out,
                              fwm_error *err);
void TM(fwm__tm_free)(TM(fwm__tm) *tm);

/* Draw the dropout masks of the next forward calls, as fwm__lstm_tm_set_dropout (lstm_model.h):
 * step `step` of a run seeded `seed`, lane b being lane lane_offset + b. A no-op without
 * dropout. */
void TM(fwm__tm_set_dropout)(TM(fwm__tm) *tm, uint64_t seed, uint64_t step, int lane_offset);


/* One window: x and y are [B][len] (lane-major, lane b's tokens at b*len), 1 <= len <= window,
 * ids < V. Steps every lane `len` times from its carried state, leaves the new state in
 * tm->shell.state, keeps what the backward pass needs, and returns the mean loss over the loss rows. */
double TM(fwm__tm_forward)(TM(fwm__tm) *tm, const uint32_t *x, const uint32_t *y, int len);

/* Gradients of the last forward call's mean loss with respect to every parameter, added to
 * tm->shell.grads (truncated BPTT: nothing flows into the state the window started from). */
void TM(fwm__tm_backward)(TM(fwm__tm) *tm);

/* Logits of loss row i of the last forward call are not kept; its probabilities are
 * tm->shell.probs + i * V and its position is tm->shell.loss_rows[i] (= t*B + b). */
