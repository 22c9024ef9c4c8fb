/* test_gradcheck.c - the trainer's analytic gradients against central finite differences.
 *
 * A tiny FWM in double precision, two lanes, a window of 24 steps (F stored every 5 steps, so the
 * backward pass replays full and partial segments) that starts from a non-zero carried state.
 * The write scale and weights are large enough that the Frobenius-norm clamp is active at many
 * steps and inactive at others; every entry of every parameter tensor is checked, in LM mode (read
 * every step, loss everywhere, residual off) and QM mode (read and loss only at "?", residual on).
 * A third case with T = 32 covers the kernels' vector paths (a sample of ~40 entries per tensor).
 * Two more cases stack the FWM (fwm.block_count 3: two LSTM layers below the FWM's, E != H), in
 * LM and QM mode, every entry of every tensor, the lower layers' included (their weights drawn in
 * +-0.8); the clamp is active at every step of the LM case and at none of the QM case, and the
 * relative error's floor is 1e-4 (finite differences through three LSTM layers err by about 1e-9
 * on entries whose gradient is almost zero). Three cases train with the AWD dropouts (p = 0.3:
 * all four at L = 3 and L = 1, and all but the embedding elements', so through the input table,
 * at L = 3), the masks of a later step drawn alike in both precisions. Two tie the embeddings
 * (E = H: the output matrix is Emb, whose gradient sums both uses; output.weight gets none).
 * Also checks that the float instantiation computes the same loss and gradients as the double one.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fwm_model.h"
#include <math.h>

#include "fwm_model_shape.h" /* fwm__tensor_name */

#include "check.h"

enum { LANES = 2, LEN = 24, QMARK = 3 };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(double low, double high)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return low + (high - low) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static void make_tokens(uint32_t *x, uint32_t *y, uint32_t V)
{
    for (int i = 0; i < LANES * LEN; i++) {
        double u = uniform(0, 1);
        x[i] = u < 0.25 ? QMARK : 1 + (uint32_t)uniform(0, V - 1);
        y[i] = uniform(0, 1) < 0.1 ? 0 : 1 + (uint32_t)uniform(0, V - 1); /* some <pad> */
    }
}

static int count_clamps(const fwm__tm_f64 *tm)
{
    int n = 0;
    for (int r = 0; r < tm->shell.len * tm->config.lanes; r++)
        n += tm->norms[r] > 1.0;
    return n;
}

static void run_case(const char *name, int qm, int wide, int layers, const fwm__dropout *dropout,
                     int tie)
{
    fwm__tm_config config = {0};
    fwm_hparams *hp = &config.hp;
    hp->vocab_size = 9;
    hp->embedding_length = tie ? 6 : 5; /* tied: E == H */
    hp->hidden_size = 6;
    /* wide: T = 32, the kernels' vector paths (float 4 vectors, double 8); else plain loops */
    hp->memory_s = wide ? 32 : 4;
    hp->memory_r = wide ? 8 : 3; /* 8: whole blocks of 8 rows in the float vector path */
    hp->memory_t = wide ? 32 : 4;
    hp->read_count = 3;
    hp->residual = qm; /* cover both */
    hp->read_policy = qm ? FWM_READ_ON_TOKEN : FWM_READ_ALWAYS;
    hp->read_token_id = QMARK;
    hp->forget_bias = 1;
    hp->beta_bias = 1;
    hp->write_scale = wide ? 0.05f : 0.5f;
    hp->layer_norm_eps = 1e-5f;
    hp->padding_token_id = 0;
    hp->eos_token_id = 1;
    hp->block_count = (uint16_t)layers;
    config.lanes = LANES;
    config.window = LEN;
    config.segment = 5;
    config.loss_mode = qm ? FWM__LOSS_QM : FWM__LOSS_LM;
    config.loss_token_id = QMARK;
    if (dropout)
        config.dropout = *dropout;
    config.tie_embeddings = tie;

    fwm__tm_f64 *tm = NULL;
    fwm__tm_f32 *tmf = NULL;
    fwm_error err;
    CHECK_INT(fwm__tm_create_f64(&config, NULL, &tm, &err), FWM_OK);
    CHECK_INT(fwm__tm_create_f32(&config, NULL, &tmf, &err), FWM_OK);
    if (!tm || !tmf)
        return;
    if (dropout) { /* masks of some later step of a run, the same in both precisions */
        fwm__tm_set_dropout_f64(tm, 7, 3, 1);
        fwm__tm_set_dropout_f32(tmf, 7, 3, 1);
    }
    CHECK_INT(tm->layout.count, FWM_TENSOR_COUNT + 3 * (layers - 1));
    for (size_t k = 0; k < tm->layout.count; k++)
        for (size_t i = 0; i < tm->layout.size[k]; i++) {
            double w = k >= FWM_TENSOR_COUNT ? uniform(-0.8, 0.8) : uniform(-1.2, 1.2);
            tm->shell.params[tm->layout.offset[k] + i] = w;
            tmf->shell.params[tm->layout.offset[k] + i] = (float)w;
        }
    uint32_t x[LANES * LEN], y[LANES * LEN];
    /* a first window gives every lane a non-zero state */
    make_tokens(x, y, hp->vocab_size);
    fwm__tm_forward_f64(tm, x, y, LEN);
    fwm__tm_forward_f32(tmf, x, y, LEN);
    make_tokens(x, y, hp->vocab_size);
    size_t state_n = LANES * tm->shell.state_size;
    double *saved = malloc(state_n * sizeof *saved);
    memcpy(saved, tm->shell.state, state_n * sizeof *saved);

    fwm__tm_shell_zero_grads_f64(&tm->shell);
    double loss = fwm__tm_forward_f64(tm, x, y, LEN);
    int clamps = count_clamps(tm), reads = 0;
    for (int r = 0; r < LEN * LANES; r++)
        reads += tm->read_mask[r];
    printf("%s: loss %.6f over %d loss rows, clamp active at %d of %d steps, %d read steps\n",
           name, loss, tm->shell.n_loss_rows, clamps, LEN * LANES, reads);
    if (dropout) { /* the dropout cases' windows: both sides of the clamp */
        CHECK_GE(clamps, 5);
        CHECK_LE(clamps, LEN * LANES - 4);
    } else if (layers == 1) { /* both sides of the clamp in one window */
        CHECK_GE(clamps, 5);
        CHECK_LE(clamps, LEN * LANES - 5);
    } else { /* the stacked FWM's h varies less: LM L=3 clamps at every step, QM L=3 at none */
        CHECK(qm ? clamps == 0 : clamps == LEN * LANES);
    }
    CHECK_GE(reads, 6);
    fwm__tm_backward_f64(tm);

    /* float instantiation: same loss and gradients within float precision */
    fwm__tm_shell_zero_grads_f32(&tmf->shell);
    double loss_f = fwm__tm_forward_f32(tmf, x, y, LEN);
    fwm__tm_backward_f32(tmf);
    CHECK_LE(fabs(loss_f - loss), 1e-4 * fabs(loss));
    double worst_float = 0, grad_scale = 0;
    for (size_t i = 0; i < tm->layout.total; i++)
        if (fabs(tm->shell.grads[i]) > grad_scale)
            grad_scale = fabs(tm->shell.grads[i]);
    for (size_t i = 0; i < tm->layout.total; i++) {
        double e = fabs((double)tmf->shell.grads[i] - tm->shell.grads[i]) / grad_scale;
        if (e > worst_float)
            worst_float = e;
    }
    printf("%s: float vs double gradients: worst difference %.3g of the largest gradient\n", name,
           worst_float);
    CHECK_LE(worst_float, 1e-4);

    double *analytic = malloc(tm->layout.total * sizeof *analytic);
    memcpy(analytic, tm->shell.grads, tm->layout.total * sizeof *analytic);
    const double h = 1e-5;
    double worst_all = 0;
    for (size_t k = 0; k < tm->layout.count; k++) {
        double worst = 0, biggest = 0;
        size_t stride = wide ? 1 + tm->layout.size[k] / 40 : 1; /* wide: about 40 entries each */
        for (size_t i = 0; i < tm->layout.size[k]; i += stride) {
            size_t at = tm->layout.offset[k] + i;
            double keep = tm->shell.params[at];
            tm->shell.params[at] = keep + h;
            memcpy(tm->shell.state, saved, state_n * sizeof *saved);
            double plus = fwm__tm_forward_f64(tm, x, y, LEN);
            tm->shell.params[at] = keep - h;
            memcpy(tm->shell.state, saved, state_n * sizeof *saved);
            double minus = fwm__tm_forward_f64(tm, x, y, LEN);
            tm->shell.params[at] = keep;
            double numeric = (plus - minus) / (2 * h), a = analytic[at];
            double denom = fabs(a) + fabs(numeric);
            /* the floor keeps finite-difference rounding (~1e-10 absolute at h = 1e-5) on entries whose
             * gradient is almost zero from counting as a relative error */
            double floor = layers > 1 ? 1e-4 : 1e-5; /* three LSTM layers: ~1e-9 absolute */
            double rel = fabs(a - numeric) / (denom > floor ? denom : floor);
            if (rel > worst) {
                worst = rel;
                if (getenv("GRADCHECK_VERBOSE"))
                    printf("  %s[%zu]: analytic %.10g numeric %.10g\n", fwm__tensor_name((int)k),
                           i, a, numeric);
            }
            if (fabs(a) > biggest)
                biggest = fabs(a);
        }
        printf("%s: %-18s %5zu entries (every %zu-th checked), largest |grad| %.3g, worst relative error %.3g\n", name,
               fwm__tensor_name((int)k), tm->layout.size[k], stride, biggest, worst);
        if (tie && k == FWM_TENSOR_output_weight) { /* tied: Emb is the output matrix */
            CHECK(biggest == 0);
            continue;
        }
        CHECK(biggest > 0); /* every tensor takes part */
        CHECK_LE(worst, 1e-5);
        if (worst > worst_all)
            worst_all = worst;
    }
    printf("%s: worst relative error over all tensors %.3g\n", name, worst_all);
    free(analytic);
    free(saved);
    fwm__tm_free_f64(tm);
    fwm__tm_free_f32(tmf);
}

int main(void)
{
    const fwm__dropout all = {0.3f, 0.3f, 0.3f, 0.3f}, no_embedding = {0.3f, 0, 0.3f, 0.3f};
    run_case("LM", 0, 0, 1, NULL, 0);
    run_case("QM", 1, 0, 1, NULL, 0);
    run_case("LM T=32", 0, 1, 1, NULL, 0);
    run_case("LM L=3", 0, 0, 3, NULL, 0);
    run_case("QM L=3", 1, 0, 3, NULL, 0);
    run_case("LM L=3 dropout", 0, 0, 3, &all, 0);
    run_case("QM L=3 dropout, no embedding", 1, 0, 3, &no_embedding, 0);
    run_case("LM L=1 dropout", 0, 0, 1, &all, 0);
    run_case("LM L=3 tied embeddings, dropout", 0, 0, 3, &all, 1);
    run_case("QM tied embeddings", 1, 0, 1, NULL, 1);
    return check_finish("test_gradcheck");
}
