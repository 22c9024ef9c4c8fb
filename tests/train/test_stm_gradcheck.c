/* test_stm_gradcheck.c - the STM's analytic gradients against central finite differences, every
 * entry of every tensor, in double precision, in both input modes.
 *
 * Tiny models (V=10, E=3, d=3, n_q=2; word mode n_r=2, sentence mode P=4 and H_a=3), two lanes,
 * all three alphas non-zero (so the relational transfer and every path take part), a window that
 * starts from the state a first window left: in word mode the memories, in sentence mode also a
 * half-read sentence in the buffer, so the window boundary falls inside a sentence and the
 * carried buffer is encoded with the window's words. The checked windows hold statements,
 * questions with their answers, a sentence longer than P (only its first P words count) and an
 * <eos> that resets the lane (so the initial memories take part). Word mode in LM and QM mode.
 * Also: the float instantiation gives the same loss and gradients as the double one; evaluation
 * (forward only) gives the same loss and carried state; two calls of half the window carry the
 * state as one call; a backward pass with a segment of one core step gives the automatic
 * segment's gradients bit for bit; with alpha1 and alpha3 held (alpha3 = 0: no transfer) and Z
 * held, their gradients are zero and the others are those of the free model.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "arch_test_util.h"
#include "check.h"
#include "stm_model.h"

enum { LANES = 2, LEN = 16, FIRST = 9, V = 10 };
enum { PAD = 0, EOS = 1, DOT = 2, QM = 3 };

/* Two lanes' streams (sentence words are 4..9): statements, questions with answers, a sentence of
 * six words (P = 4), an <eos>. The first FIRST tokens form the first window (it ends inside a
 * sentence), the next LEN the checked one. */
static const uint32_t streams[LANES][FIRST + LEN + 1] = {
    {4, 5, 2, 6, 7, 8, 2, 9, 4, /* | */ 5, 6, 2, 7, 3, 8, 4, 5, 6, 7, 8, 9, 2, 5, 3, 6, 1},
    {6, 2, 7, 3, 9, 5, 4, 8, 6, /* | */ 2, 4, 5, 3, 7, 1, 8, 9, 2, 6, 3, 4, 5, 4, 2, 7, 3},
};

static void window_tokens(int first, uint32_t *x, uint32_t *y, int len)
{
    for (int b = 0; b < LANES; b++)
        for (int t = 0; t < len; t++) {
            x[b * len + t] = streams[b][first + t];
            y[b * len + t] = streams[b][first + t + 1];
        }
}

/* Word mode: random tokens, some <eos>, some "?", some padding targets. */
static void word_tokens(uint32_t *x, uint32_t *y, int len)
{
    for (int i = 0; i < LANES * len; i++) {
        double u = atu_uniform(0, 1);
        x[i] = u < 0.1 ? EOS : u < 0.35 ? QM : 2 + (uint32_t)atu_uniform(0, V - 2);
        y[i] = atu_uniform(0, 1) < 0.1 ? PAD : 1 + (uint32_t)atu_uniform(0, V - 1);
    }
}

static int tensor_index(const fwm__tensor_layout *layout, const char *name)
{
    for (size_t k = 0; k < layout->count; k++)
        if (strcmp(layout->names[k], name) == 0)
            return (int)k;
    return -1;
}

typedef struct probe {
    fwm__stm_tm_f64 *tm;
    const double *saved;
    const uint32_t *x, *y;
} probe;

static double loss_of(void *ctx)
{
    probe *p = ctx;
    memcpy(p->tm->shell.state, p->saved, LANES * p->tm->shell.state_size * sizeof *p->saved);
    return fwm__stm_tm_forward_f64(p->tm, p->x, p->y, LEN);
}

static void tiny(fwm__stm_config *config, int sentence, int qm)
{
    memset(config, 0, sizeof *config);
    fwm_stm_hparams *hp = &config->hp;
    fwm__stm_hparams_defaults(hp);
    hp->vocab_size = V;
    hp->input_mode = sentence ? FWM_STM_INPUT_SENTENCE : FWM_STM_INPUT_WORD;
    hp->embedding_length = 3;
    hp->sentence_length = 4;
    hp->memory_size = 3;
    hp->query_count = 2;
    hp->relation_length = 2;
    hp->answer_hidden = 3;
    hp->sam_norm_eps = 1e-5f;
    hp->answer_norm_eps = 1e-5f;
    hp->reset_on_eos = true;
    hp->statement_end_token_id = DOT;
    hp->question_end_token_id = QM;
    hp->padding_token_id = PAD;
    hp->eos_token_id = EOS;
    config->lanes = LANES;
    config->window = LEN;
    config->loss_mode = qm ? FWM__LOSS_QM : FWM__LOSS_LM;
    config->loss_token_id = QM;
    config->train_output = 1;
}

/* Random parameters; alpha = (0.9, 0.6, 0.4); gains near 1. */
static void set_params(fwm__stm_tm_f64 *a, fwm__stm_tm_f64 *b, fwm__stm_tm_f32 *f)
{
    for (size_t k = 0; k < a->layout.count; k++)
        for (size_t i = 0; i < a->layout.size[k]; i++) {
            double w = atu_uniform(-0.5, 0.5);
            if (strcmp(a->layout.names[k], "stm.alpha") == 0)
                w = i == 0 ? 0.9 : i == 1 ? 0.6 : 0.4;
            else if (strstr(a->layout.names[k], "norm"))
                w = 1 + 0.3 * w;
            size_t at = a->layout.offset[k] + i;
            a->shell.params[at] = b->shell.params[at] = w;
            f->shell.params[at] = (float)w;
        }
}

static void run_case(const char *name, int sentence, int qm)
{
    fwm__stm_config config;
    tiny(&config, sentence, qm);
    fwm__stm_tm_f64 *tm = NULL, *te = NULL, *ts = NULL;
    fwm__stm_tm_f32 *tmf = NULL;
    fwm_error err;
    CHECK_INT(fwm__stm_tm_create_f64(&config, NULL, &tm, &err), FWM_OK);
    CHECK_INT(fwm__stm_tm_create_f32(&config, NULL, &tmf, &err), FWM_OK);
    config.segment = 1;
    CHECK_INT(fwm__stm_tm_create_f64(&config, NULL, &ts, &err), FWM_OK);
    config.segment = 0;
    config.forward_only = 1;
    CHECK_INT(fwm__stm_tm_create_f64(&config, NULL, &te, &err), FWM_OK);
    if (!tm || !tmf || !te || !ts)
        return;
    set_params(tm, te, tmf);
    memcpy(ts->shell.params, tm->shell.params, tm->layout.total * sizeof(double));
    fwm__stm_tm_reset_state_f64(tm);
    fwm__stm_tm_reset_state_f32(tmf);
    uint32_t x[LANES * LEN], y[LANES * LEN], x1[LANES * FIRST], y1[LANES * FIRST];
    if (sentence) {
        window_tokens(0, x1, y1, FIRST);
        window_tokens(FIRST, x, y, LEN);
    } else {
        word_tokens(x1, y1, FIRST);
        word_tokens(x, y, LEN);
    }
    fwm__stm_tm_forward_f64(tm, x1, y1, FIRST); /* the first window: a state to carry */
    fwm__stm_tm_forward_f32(tmf, x1, y1, FIRST);
    size_t state_n = LANES * tm->shell.state_size;
    double *saved = malloc(state_n * sizeof *saved);
    memcpy(saved, tm->shell.state, state_n * sizeof *saved);
    if (sentence) /* both lanes stopped inside a sentence: words in the buffer */
        for (int b = 0; b < LANES; b++)
            CHECK(saved[b * tm->shell.state_size + tm->mem_floats + config.hp.sentence_length] > 0);

    fwm__tm_shell_zero_grads_f64(&tm->shell);
    probe p = {tm, saved, x, y};
    double loss = loss_of(&p);
    int resets = 0, steps = 0;
    for (int r = 0; r < LANES * LEN; r++) {
        resets += (tm->act[r] & FWM__STM_ACT_RESET) != 0;
        steps += (tm->act[r] & FWM__STM_ACT_CORE) != 0;
    }
    printf("%s: loss %.6f over %d loss rows, %d core steps, %d resets\n", name, loss,
           tm->shell.n_loss_rows, steps, resets);
    CHECK_GE(tm->shell.n_loss_rows, 4);
    CHECK_GE(resets, 1);
    fwm__stm_tm_backward_f64(tm);

    /* evaluation against training: the same loss and state */
    memcpy(te->shell.state, saved, state_n * sizeof *saved);
    double loss_e = fwm__stm_tm_forward_f64(te, x, y, LEN);
    CHECK(fabs(loss_e - loss) <= 1e-13 * fabs(loss));
    double state_diff = 0;
    for (size_t i = 0; i < state_n; i++)
        state_diff = fmax(state_diff, fabs(te->shell.state[i] - tm->shell.state[i]));
    CHECK_LE(state_diff, 1e-13);
    /* two calls of half the window */
    enum { H = LEN / 2 };
    uint32_t xa[LANES * H], ya[LANES * H], xb[LANES * H], yb[LANES * H];
    for (int b = 0; b < LANES; b++)
        for (int t = 0; t < H; t++) {
            xa[b * H + t] = x[b * LEN + t];
            ya[b * H + t] = y[b * LEN + t];
            xb[b * H + t] = x[b * LEN + H + t];
            yb[b * H + t] = y[b * LEN + H + t];
        }
    memcpy(te->shell.state, saved, state_n * sizeof *saved);
    double sum2 = 0;
    fwm__stm_tm_forward_f64(te, xa, ya, H);
    sum2 += te->shell.loss_sum;
    fwm__stm_tm_forward_f64(te, xb, yb, H);
    sum2 += te->shell.loss_sum;
    CHECK(fabs(sum2 - tm->shell.loss_sum) <= 1e-12 * fabs(tm->shell.loss_sum));
    state_diff = 0;
    for (size_t i = 0; i < state_n; i++)
        state_diff = fmax(state_diff, fabs(te->shell.state[i] - tm->shell.state[i]));
    CHECK_LE(state_diff, 1e-13);
    /* a segment of one core step: the same gradients, bit for bit */
    CHECK_INT(ts->segment, 1);
    memcpy(ts->shell.state, saved, state_n * sizeof *saved);
    fwm__tm_shell_zero_grads_f64(&ts->shell);
    fwm__stm_tm_forward_f64(ts, x, y, LEN);
    fwm__stm_tm_backward_f64(ts);
    CHECK(memcmp(ts->shell.grads, tm->shell.grads, tm->layout.total * sizeof(double)) == 0);

    fwm__tm_shell_zero_grads_f32(&tmf->shell);
    double loss_f = fwm__stm_tm_forward_f32(tmf, x, y, LEN);
    fwm__stm_tm_backward_f32(tmf);
    CHECK_LE(fabs(loss_f - loss), 1e-4 * fabs(loss));
    double worst_float = atu_float_vs_double(tmf->shell.grads, tm->shell.grads, tm->layout.total);
    printf("%s: float vs double gradients: worst difference %.3g of the largest gradient\n", name,
           worst_float);
    CHECK_LE(worst_float, 1e-4);

    double *analytic = malloc(tm->layout.total * sizeof *analytic);
    memcpy(analytic, tm->shell.grads, tm->layout.total * sizeof *analytic);
    atu_gradcheck(name, &tm->layout, tm->shell.params, analytic, loss_of, &p, 1e-5, 1e-5, NULL);

    /* held alpha1, alpha3 (alpha3 = 0: no transfer) and Z: zero gradients; the others as the free
     * model's with the same alpha3 = 0 */
    int k_alpha = tensor_index(&tm->layout, "stm.alpha");
    int k_z = sentence ? tensor_index(&tm->layout, "output.weight") : -1;
    double *alpha = tm->shell.params + tm->layout.offset[k_alpha];
    alpha[2] = 0;
    memcpy(ts->shell.params, tm->shell.params, tm->layout.total * sizeof(double));
    fwm__tm_shell_zero_grads_f64(&tm->shell);
    loss_of(&p);
    fwm__stm_tm_backward_f64(tm);
    ts->config.fix_alpha = 1;
    ts->config.train_output = 0;
    memcpy(ts->shell.state, saved, state_n * sizeof *saved);
    fwm__tm_shell_zero_grads_f64(&ts->shell);
    fwm__stm_tm_forward_f64(ts, x, y, LEN);
    fwm__stm_tm_backward_f64(ts);
    const double *ga = ts->shell.grads + ts->layout.offset[k_alpha];
    CHECK(ga[0] == 0 && ga[2] == 0 && ga[1] != 0);
    CHECK(tm->shell.grads[tm->layout.offset[k_alpha]] != 0);
    double held_diff = 0;
    for (size_t k = 0; k < tm->layout.count; k++) {
        int z = (int)k == k_z, a = (int)k == k_alpha;
        for (size_t i = 0; i < tm->layout.size[k]; i++) {
            size_t at = tm->layout.offset[k] + i;
            if (z || (a && i != 1))
                CHECK(ts->shell.grads[at] == 0);
            else
                held_diff = fmax(held_diff, fabs(ts->shell.grads[at] - tm->shell.grads[at]));
        }
    }
    printf("%s: alpha1, alpha3%s held: other gradients differ by %.3g\n", name,
           sentence ? " and Z" : "", held_diff);
    CHECK_LE(held_diff, 1e-12);
    free(analytic);
    free(saved);
    fwm__stm_tm_free_f64(tm);
    fwm__stm_tm_free_f64(te);
    fwm__stm_tm_free_f64(ts);
    fwm__stm_tm_free_f32(tmf);
}

int main(void)
{
    run_case("word LM", 0, 0);
    run_case("word QM", 0, 1);
    run_case("sentence", 1, 0);
    return check_finish("test_stm_gradcheck");
}
