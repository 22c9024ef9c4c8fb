/* test_token_ids.c - the trainer and the evaluation refuse a window holding an id the model's
 * vocabulary lacks, naming the id, its lane and position and the vocabulary size, instead of
 * reading past the model's tables; for every architecture, since the check is the net's
 * (fwm__net_check_ids) and not the forward pass's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "evaluate.h"
#include "synthetic_data.h"
#include "trainer.h"

#define BAD_ID (SYN_VOCAB + 82u)

static fwm__train_options options(fwm_arch arch)
{
    fwm__train_options o;
    memset(&o, 0, sizeof o);
    o.arch = arch;
    if (arch == FWM_ARCH_FWM) {
        o.hp = synthetic_hparams(0);
    } else if (arch == FWM_ARCH_LSTM) {
        o.lstm.vocab_size = SYN_VOCAB;
        o.lstm.embedding_length = 8;
        o.lstm.hidden_size = 12;
        o.lstm.layer_count = 1;
        o.lstm.forget_bias = 1;
        o.lstm.padding_token_id = SYN_PAD;
        o.lstm.eos_token_id = SYN_EOS;
    } else if (arch == FWM_ARCH_MNM) {
        o.mnm.vocab_size = SYN_VOCAB;
        o.mnm.embedding_length = 12;
        o.mnm.hidden_size = 20;
        o.mnm.head_count = 2;
        o.mnm.key_length = 8;
        o.mnm.value_length = 6;
        o.mnm.memory_hidden = 10;
        o.mnm.memory_layers = 3;
        o.mnm.output_length = 16;
        o.mnm.padding_token_id = SYN_PAD;
        o.mnm.eos_token_id = SYN_EOS;
        o.meta_weight = 1.0;
        o.segment = 7;
    } else {
        fwm__gfw_hparams_defaults(&o.gfw);
        o.gfw.vocab_size = SYN_VOCAB;
        o.gfw.embedding_length = 6;
        o.gfw.fast_hidden = 7;
        o.gfw.slow_hidden = 9;
        o.gfw.slow_inner = 11;
        o.gfw.padding_token_id = SYN_PAD;
        o.gfw.eos_token_id = SYN_EOS;
    }
    o.mode = FWM__LOSS_LM;
    o.qmark_id = SYN_QMARK;
    o.lanes = 3;
    o.window = 20;
    o.adam = fwm__adam_default_params();
    o.seed = 5;
    o.threads = 1;
    return o;
}

/* Every sample's first word is BAD_ID. A stream is [<eos>] w.. [<eos>] w.., so whatever the order,
 * the first window's lane 0 has <eos> as its input at position 0 and BAD_ID as its target there:
 * the first bad id in lane-major order. */
static const char *const want_message = "target id 99 at lane 0, position 0 of the window is out of "
                                        "range: the model's vocabulary has V = 17 tokens (ids 0 to 16)";

static void refuses(fwm_arch arch)
{
    _Static_assert(BAD_ID == 99 && SYN_VOCAB == 17, "the message above names these");
    fwm__catbabi_split split;
    CHECK_INT(synthetic_split(&split, 40, 3), 0);
    for (size_t e = 0; e < split.n_samples; e++)
        split.words[split.starts[e]] = BAD_ID;
    fwm__train_options o = options(arch);
    fwm__trainer *tr = NULL;
    fwm_error err;
    CHECK_INT(fwm__trainer_create(&o, &split, NULL, SYN_PAD, SYN_EOS, NULL, &tr, &err), FWM_OK);
    if (tr) {
        CHECK_INT(fwm__trainer_step(tr, &err), FWM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(err.message, want_message);
        CHECK_INT(tr->step, 0);

        fwm__eval_options eo = {.lanes = 1, .window = 20};
        fwm__qa_metrics metrics;
        memset(&metrics, 0, sizeof metrics);
        CHECK_INT(fwm__evaluate(&tr->spec, tr->net->params, &split, SYN_PAD, SYN_EOS, SYN_QMARK, &eo,
                                NULL, &metrics, &err),
                  FWM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(err.message, want_message);

        /* the input side, and a later lane and position, directly */
        uint32_t x[3 * 4], y[3 * 4];
        for (int i = 0; i < 12; i++)
            x[i] = y[i] = SYN_QMARK;
        CHECK_INT(fwm__net_check_ids(tr->net, x, y, 3, 4, &err), FWM_OK);
        x[2 * 4 + 3] = SYN_VOCAB;
        CHECK_INT(fwm__net_check_ids(tr->net, x, y, 3, 4, &err), FWM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(err.message, "token id 17 at lane 2, position 3 of the window is out of range");
        fwm__trainer_free(tr);
    }
    fwm__catbabi_split_release(&split);
}

static void fwm_refuses(void) { refuses(FWM_ARCH_FWM); }
static void lstm_refuses(void) { refuses(FWM_ARCH_LSTM); }
static void mnm_refuses(void) { refuses(FWM_ARCH_MNM); }
static void gfw_refuses(void) { refuses(FWM_ARCH_GFW); }

int main(void)
{
    static const check_case cases[] = {
        {"fwm", fwm_refuses},
        {"lstm", lstm_refuses},
        {"mnm", mnm_refuses},
        {"gfw", gfw_refuses},
    };
    return check_run_cases("test_token_ids", cases, sizeof cases / sizeof cases[0]);
}
