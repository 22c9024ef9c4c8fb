/* train_main.c - fwm-train: train an FWM (or, with --arch, the paper's LSTM or MNM baseline, the
 * Gated Fast Weights model or the STM) on catbAbI (or, with --task ar, the associative retrieval task of
 * ar_task.h) and write a model file.
 *
 * Reads bAbI v1.2 (--data, --set), builds the vocabulary and the streams (catbabi_stream.h),
 * trains with truncated BPTT and Adam (trainer.h), evaluates on valid during training and on test
 * with one lane at the end, and writes the model with its provenance keys. --resume continues
 * from <run-dir>/checkpoint.bin. Run with --help for the options: they are one table (`options`
 * below, options.h) from which both the parsing and --help come.
 *
 * Under mpirun (a build with MPI, distributed.h) every process runs this program: they read the
 * same options and data, train their share of the lane groups (trainer.h), and rank 0 alone prints
 * the run's messages, evaluates, and writes the run folder and the model file. A failure on any
 * rank after the start ends every rank (fwm__dist_abort), so none waits forever for another.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "babi_standard.h"
#include "blas_kernels.h"
#include "cli_common.h"
#include "fwm_error.h"
#include "fwm_model_shape.h"
#include "model_io.h"
#include "options.h"
#include "progress.h"
#include "text_corpus.h"
#include "trainer.h"


/* SIGINT / SIGTERM: the trainer stops at the next step boundary and writes its checkpoint. The
 * handler only records the signal; it is installed with SA_RESETHAND, so a second signal ends the
 * program at once (the last periodic checkpoint stays). */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signal_number)
{
    stop_signal = signal_number;
}

static void install_stop_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The processes of this run; informational messages come from rank 0 only. */
static fwm__dist dist;

#define NOTE(...)                                                                                \
    do {                                                                                         \
        if (dist.rank == 0)                                                                      \
            fprintf(stderr, __VA_ARGS__);                                                        \
    } while (0)


static int make_dir(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755);
            *p = '/';
        }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* What the options set: the trainer's options and the run's own (the table `options` below). */
typedef struct train_settings {
    fwm__train_options o;
    const char *arch_name, *task_name, *data_dir, *set, *protocol, *mode_name;
    const char *run_dir, *out_path, *model_name;
    fwm__ar_config ar;      /* --task ar */
    uint32_t vocab_size;    /* --task text: 0 = every training word */
    int resume, force, run_test, test_lanes;
} train_settings;

static void settings_defaults(train_settings *s)
{
    memset(s, 0, sizeof *s);
    s->arch_name = "fwm";
    s->task_name = "catbabi";
    s->set = "10k";
    s->protocol = "catbabi";
    s->mode_name = "lm";
    fwm__ar_config_default(&s->ar);
    s->run_test = 1;
    s->test_lanes = 1;
    fwm__train_options *o = &s->o;
    o->adam = fwm__adam_default_params();
    o->steps = 30000;
    o->lanes = 32;
    o->window = 200;
    o->seed = 1;
    o->threads = fwm__cpu_count() / dist.local_size;
    if (o->threads < 1)
        o->threads = 1;
    o->dist = &dist;
    o->eval_every = 1000;
    o->eval.lanes = 100;
    o->eval.window = 200;
    o->checkpoint_every = 500;
    o->progress_seconds = 10;
    fwm__hparams_defaults(&o->hp); /* the paper's sizes and constants (FWM_HPARAM_LIST) */
    fwm__lstm_hparams_defaults(&o->lstm); /* the same for --arch lstm (FWM_LSTM_HPARAM_LIST) */
    fwm__mnm_hparams_defaults(&o->mnm);   /* and for --arch mnm (FWM_MNM_HPARAM_LIST) */
    o->meta_weight = FWM_MNM_DEFAULT_META_WEIGHT;
    fwm__gfw_hparams_defaults(&o->gfw); /* gfw (FWM_GFW_HPARAM_LIST: the paper's sizes) */
    fwm__stm_hparams_defaults(&o->stm); /* stm (FWM_STM_HPARAM_LIST: the bAbI sizes) */
    o->max_nonfinite = 10;
}

/* The options' hooks: a value that goes to several architectures' sizes, or depends on --arch. */
static int set_layers(void *settings, const fwm__option *option, const char *name,
                      const char *value)
{
    (void)option, (void)name, (void)value;
    fwm__train_options *o = &((train_settings *)settings)->o;
    int lstm = o->arch == FWM_ARCH_LSTM;
    if (!lstm && o->lstm.layer_count > FWM_MAX_BLOCKS) {
        NOTE("error: --layers: at most %u for --arch fwm (the stacked FWM)\n", FWM_MAX_BLOCKS);
        return 2;
    }
    o->hp.block_count = (uint16_t)(lstm ? 1 : o->lstm.layer_count);
    return 0;
}

static int set_embedding(void *settings, const fwm__option *option, const char *name,
                         const char *value)
{
    (void)option, (void)name, (void)value;
    fwm__train_options *o = &((train_settings *)settings)->o;
    o->lstm.embedding_length = o->mnm.embedding_length = o->hp.embedding_length;
    o->gfw.embedding_length = o->stm.embedding_length = o->hp.embedding_length;
    return 0;
}

static int set_hidden(void *settings, const fwm__option *option, const char *name,
                      const char *value)
{
    (void)option;
    fwm__train_options *o = &((train_settings *)settings)->o;
    /* gfw: m >= 2 (the layer norm of a single number is 0) */
    o->hp.hidden_size =
            (uint32_t)fwm__parse_long(name, value, o->arch == FWM_ARCH_GFW ? 2 : 1, FWM_MAX_DIM);
    o->lstm.hidden_size = o->mnm.hidden_size = o->hp.hidden_size;
    o->gfw.fast_hidden = o->hp.hidden_size;
    return 0;
}

static int set_residual(void *settings, const fwm__option *option, const char *name,
                        const char *value)
{
    (void)name, (void)value;
    fwm__train_options *o = &((train_settings *)settings)->o;
    o->hp.residual = o->lstm.residual = strcmp(option->name, "--residual") == 0;
    return 0;
}

static int set_input(void *settings, const fwm__option *option, const char *name, const char *value)
{
    (void)option, (void)name;
    fwm_stm_hparams *sh = &((train_settings *)settings)->o.stm;
    if (strcmp(value, "sentence") == 0)
        sh->input_mode = FWM_STM_INPUT_SENTENCE;
    else if (strcmp(value, "word") == 0)
        sh->input_mode = FWM_STM_INPUT_WORD;
    else {
        NOTE("error: --input expects sentence or word, got '%s'\n", value);
        return 2;
    }
    return 0;
}

/* The contexts of fwm__option.applies: the architectures. */
#define A_FWM (1u << FWM_ARCH_FWM)
#define A_LSTM (1u << FWM_ARCH_LSTM)
#define A_MNM (1u << FWM_ARCH_MNM)
#define A_GFW (1u << FWM_ARCH_GFW)
#define A_STM (1u << FWM_ARCH_STM)

#define S(field) offsetof(train_settings, field)
#define O(field) offsetof(train_settings, o.field)
#define TEXT(line) {NULL, FWM__OPTION_TEXT, 0, 0, 0, NULL, line, NULL, 0, NULL}
#define MAX_DIM FWM_MAX_DIM
/* name, kind, where, min, max, value's name, help ("{}": the default; {key}: help_value's),
 * hook, architectures (0: all), deprecated alias */
static const fwm__option options[] = {
    TEXT("usage: fwm-train [options]\n"
         "Train a Fast Weight Memory model (or the LSTM or MNM baseline, the Gated Fast\n"
         "Weights model or the STM) on catbAbI (or the standard bAbI protocol, or the associative\n"
         "retrieval task) and write a model file.\n"),
    TEXT("data:"),
    {"--task", FWM__OPTION_STRING, S(task_name), 0, 0, "catbabi|ar|text",
     "catbAbI (default), the associative retrieval task of the\n"
     "Gated Fast Weights paper (docs/AR_TASK.md: generated; loss\n"
     "at every target; no --mode), or language modelling on plain\n"
     "text: --data DIR holds train.txt, valid.txt and test.txt,\n"
     "split into words by docs/TEXT.md's rules (loss at every\n"
     "word; perplexity; no --mode)", NULL, 0, NULL},
    {"--vocab-size", FWM__OPTION_U32, S(vocab_size), 1, 1L << 24, "N",
     "--task text: keep the N most frequent training words (plus\n"
     "<pad>, <eos> and <unk>); default: every training word", NULL, 0, NULL},
    {"--data", FWM__OPTION_STRING, S(data_dir), 0, 0, "DIR", "bAbI v1.2 folder (default: {data})",
     NULL, 0, NULL},
    {"--set", FWM__OPTION_STRING, S(set), 0, 0, "10k|1k|FOLDER",
     "catbAbI-10k (en-valid-10k, default) or 1k (en-valid)", NULL, 0, NULL},
    {"--protocol", FWM__OPTION_STRING, S(protocol), 0, 0, "catbabi|standard",
     "catbabi: the stories concatenated, the state carried\n"
     "(default); standard: a sample per question (the story's\n"
     "statements before it, then the question), each from the\n"
     "reset state at a window boundary of its lane", NULL, 0, NULL},
    TEXT("associative retrieval (--task ar):"),
    FWM__AR_OPTIONS(S(ar)),
    TEXT("training:"),
    {"--mode", FWM__OPTION_STRING, S(mode_name), 0, 0, "lm|qm",
     "lm: loss on every token, read every step (default);\n"
     "qm: loss and read only at \"?\"", NULL, 0, NULL},
    {"--steps", FWM__OPTION_LONG, O(steps), 1, 1L << 40, "N",
     "total steps (windows) to train (default {})", NULL, 0, NULL},
    {"--lanes", FWM__OPTION_INT, O(lanes), 1, 1 << 16, "B", "batch: independent lanes (default {})",
     NULL, 0, NULL},
    {"--window", FWM__OPTION_INT, O(window), 1, 1 << 16, "W", "truncated-BPTT window (default {})",
     NULL, 0, NULL},
    {"--lr", FWM__OPTION_DOUBLE, O(adam.lr), 0, 10, "X", "Adam's learning rate (default {})", NULL,
     0, NULL},
    {"--beta1", FWM__OPTION_DOUBLE, O(adam.beta1), 0, 0.999999, "X", "Adam's beta1 (default {})",
     NULL, 0, NULL},
    {"--beta2", FWM__OPTION_DOUBLE, O(adam.beta2), 0, 0.99999999, "X", "Adam's beta2 (default {})",
     NULL, 0, NULL},
    {"--eps", FWM__OPTION_DOUBLE, O(adam.eps), 0, 1, "X", "Adam's epsilon (default {})", NULL, 0,
     NULL},
    {"--clip", FWM__OPTION_DOUBLE, O(adam.clip_norm), 0, 1e30, "X",
     "clip the gradient norm to X (default {}: off)", NULL, 0, NULL},
    {"--warmup", FWM__OPTION_LONG, O(adam.warmup_steps), 0, 1L << 40, "N",
     "linear learning-rate warm-up steps (default {})", NULL, 0, NULL},
    {"--decay-from", FWM__OPTION_LONG, O(adam.decay_start), 0, 1L << 40, "N",
     "from step N to the last step (--steps) the lr falls along a\n"
     "cosine to --lr-final (default {}: constant lr, the paper's)", NULL, 0, NULL},
    {"--lr-final", FWM__OPTION_DOUBLE, O(adam.lr_final), 0, 10, "X",
     "the lr reached at the last step (default {})", NULL, 0, NULL},
    {"--seed", FWM__OPTION_U64, O(seed), 0, 1L << 62, "N",
     "initialisation and shuffling seed (default {})", NULL, 0, NULL},
    {"--threads", FWM__OPTION_INT, O(threads), 1, 1024, "N",
     "threads per process (default: all CPUs, shared among the\n"
     "processes of a run on one machine); results depend on N", NULL, 0, NULL},
    {"--lane-groups", FWM__OPTION_INT, O(lane_groups), 1, 1 << 16, "G",
     "train the lanes as G groups whose gradients are added in\n"
     "group order (default: 1, or one per process under mpirun);\n"
     "results depend on G, not on the number of processes", NULL, 0, NULL},
    TEXT("architecture:"),
    {"--arch", FWM__OPTION_VALUE, 0, 0, 0, "fwm|lstm|mnm|gfw|stm", /* read before the others */
     "fwm: the Fast Weight Memory (default); lstm: the\n"
     "paper's LSTM baseline (stacked layers, no memory); mnm: the\n"
     "Metalearned Neural Memory baseline (MNM-p, docs/MODEL.md);\n"
     "gfw: Gated Fast Weights (Schlag & Schmidhuber, docs/MODEL.md);\n"
     "stm: the self-attentive associative memory (Le et al. 2020,\n"
     "docs/MODEL.md)", NULL, 0, NULL},
    TEXT("model (the paper's sizes by default, as fwm-init's):"),
    {"--embedding", FWM__OPTION_U32, O(hp.embedding_length), 1, MAX_DIM, "E",
     "token embedding size (default {}; lstm {lstm.embedding}; mnm {mnm.embedding}; "
     "gfw {gfw.embedding};\nstm {stm.embedding})", set_embedding, 0, "--embed"},
    {"--hidden", FWM__OPTION_VALUE, 0, 0, 0, "H",
     "LSTM hidden size (default {fwm.hidden}; lstm {lstm.hidden}; mnm {mnm.hidden}); gfw: the\n"
     "fast net's h_F and inner layer, m >= 2 (default {gfw.hidden})", set_hidden,
     A_FWM | A_LSTM | A_MNM | A_GFW, NULL},
    {"--layers", FWM__OPTION_U32, O(lstm.layer_count), 1, FWM_LSTM_MAX_LAYERS, "L",
     "lstm: stacked LSTM layers (default {}); fwm: the stacked\n"
     "FWM, L - 1 LSTM layers below the FWM's own (1 to 8,\n"
     "default 1)", set_layers, A_FWM | A_LSTM, NULL},
    {"--memory-s", FWM__OPTION_U32, O(hp.memory_s), 1, MAX_DIM, "S",
     "fast-weight key 1 size (default {})", NULL, A_FWM, "--mem-s"},
    {"--memory-r", FWM__OPTION_U32, O(hp.memory_r), 1, MAX_DIM, "R",
     "fast-weight key 2 size (default {})", NULL, A_FWM, "--mem-r"},
    {"--memory-t", FWM__OPTION_U32, O(hp.memory_t), 1, MAX_DIM, "T",
     "fast-weight value size (default {})", NULL, A_FWM, "--mem-t"},
    {"--reads", FWM__OPTION_U32, O(hp.read_count), 1, FWM_MAX_READ_COUNT, "N",
     "chained reads per step; N > 1 needs S == T (default {})", NULL, A_FWM, NULL},
    {"--residual", FWM__OPTION_HOOK, 0, 0, 0, NULL,
     "fwm: add h to the read-out{fwm.residual};\n"
     "lstm: layers >= 1 add their input to their output{lstm.residual}", set_residual,
     A_FWM | A_LSTM, NULL},
    {"--no-residual", FWM__OPTION_HOOK, 0, 0, 0, NULL, "no residual{no-residual}", set_residual,
     A_FWM | A_LSTM, NULL},
    TEXT("  --embed, --mem-s, --mem-r, --mem-t   deprecated aliases of --embedding, --memory-s,\n"
         "                        --memory-r, --memory-t (still accepted)"),
    TEXT("  mnm (fwm-init's names; no --residual):"),
    {"--heads", FWM__OPTION_U32, O(mnm.head_count), 1, FWM_MNM_MAX_HEADS, "N",
     "read and write heads (default {})", NULL, A_MNM, NULL},
    {"--key-length", FWM__OPTION_U32, O(mnm.key_length), 1, MAX_DIM, "K",
     "keys and the rate vector (default {})", NULL, A_MNM, NULL},
    {"--value-length", FWM__OPTION_U32, O(mnm.value_length), 1, MAX_DIM, "V",
     "values and the read-out (default {})", NULL, A_MNM, NULL},
    {"--memory-hidden", FWM__OPTION_U32, O(mnm.memory_hidden), 1, MAX_DIM, "D",
     "the memory net's hidden layers (default {})", NULL, A_MNM, NULL},
    {"--memory-layers", FWM__OPTION_U32, O(mnm.memory_layers), 1, FWM_MNM_MAX_MEMORY_LAYERS, "L",
     "the memory net's weight matrices (default {})", NULL, A_MNM, NULL},
    {"--output-length", FWM__OPTION_U32, O(mnm.output_length), 1, MAX_DIM, "O",
     "the controller's output y (default {})", NULL, A_MNM, NULL},
    {"--meta-weight", FWM__OPTION_DOUBLE, O(meta_weight), 0, 1e6, "X",
     "the meta-objective's coefficient in the loss (default {})", NULL, A_MNM, NULL},
    TEXT("  gfw (fwm-init's names; --embedding, --hidden as above):"),
    {"--slow-hidden", FWM__OPTION_U32, O(gfw.slow_hidden), 1, MAX_DIM, "N",
     "the slow net's state h_S (default {})", NULL, A_GFW, NULL},
    {"--slow-inner", FWM__OPTION_U32, O(gfw.slow_inner), 1, MAX_DIM, "P",
     "the slow net's transition layer (default {})", NULL, A_GFW, NULL},
    TEXT("  stm (fwm-init's names; --embedding as above; the bAbI sizes by default):"),
    {"--input", FWM__OPTION_VALUE, 0, 0, 0, "sentence|word",
     "sentence: a step per sentence, answers at \"?\" (the paper's\n"
     "bAbI model; the loss only at question ends, so --mode qm,\n"
     "its default; --mode lm is refused); word: a step and a\n"
     "prediction at every word (default sentence)", set_input, A_STM, NULL},
    {"--sentence-length", FWM__OPTION_U32, O(stm.sentence_length), 1, FWM_STM_MAX_SENTENCE_LENGTH,
     "P", "words of a sentence encoded (default {})", NULL, A_STM, NULL},
    {"--memory-size", FWM__OPTION_U32, O(stm.memory_size), 1, MAX_DIM, "d",
     "item memory d x d, relational n_q x d x d (default {})", NULL, A_STM, NULL},
    {"--queries", FWM__OPTION_U32, O(stm.query_count), 1, FWM_STM_MAX_QUERIES, "N",
     "n_q (default {})", NULL, A_STM, NULL},
    {"--relation-length", FWM__OPTION_U32, O(stm.relation_length), 1, MAX_DIM, "N",
     "n_r, the word-mode output per query (default {})", NULL, A_STM, NULL},
    {"--answer-hidden", FWM__OPTION_U32, O(stm.answer_hidden), 1, MAX_DIM, "N",
     "the answer module's MLPs, sentence mode (default {})", NULL, A_STM, NULL},
    {"--reset-on-eos", FWM__OPTION_ON_OFF_BOOL, O(stm.reset_on_eos), 0, 0, "on|off",
     "<eos> restores the reset state (default {})", NULL, A_STM, NULL},
    {"--fix-alpha", FWM__OPTION_ON_OFF, O(stm_fix_alpha), 0, 0, "on|off",
     "hold alpha1 and alpha3 at their values (the authors' bAbI\n"
     "setting: 1 and 0, no relational transfer); default off: all\n"
     "three train", NULL, A_STM, NULL},
    {"--train-output", FWM__OPTION_ON_OFF, O(stm_train_output), 0, 0, "on|off",
     "sentence mode: train the output matrix Z; default off: Z\n"
     "keeps its initial draw, as in the authors' code", NULL, A_STM, NULL},
    TEXT("regularisation (lstm only; AWD-LSTM style, all 0 = off by default, never at\n"
         "evaluation; masks drawn from --seed, the step and the lane):"),
    {"--dropout-token", FWM__OPTION_FLOAT, O(dropout.token), 0, 0.99, "P",
     "drop whole words of the input (every occurrence in a window)", NULL, 0, NULL},
    {"--dropout-embedding", FWM__OPTION_FLOAT, O(dropout.embedding), 0, 0.99, "P",
     "drop embedding elements (one mask per lane per window)", NULL, 0, NULL},
    {"--dropout-recurrent", FWM__OPTION_FLOAT, O(dropout.recurrent), 0, 0.99, "P",
     "DropConnect on every layer's W_hh (one mask per window)", NULL, 0, NULL},
    {"--dropout-layer", FWM__OPTION_FLOAT, O(dropout.layer), 0, 0.99, "P",
     "between layers (one mask per lane per layer per window)", NULL, 0, NULL},
    {"--embedding-init", FWM__OPTION_DOUBLE, O(embedding_init), 1e-6, 10, "X",
     "lstm, fwm: draw the embedding from U(-X, X) instead of the\n"
     "architecture's own initialisation (AWD-LSTM: 0.1)", NULL, A_FWM | A_LSTM, NULL},
    {"--tie-embeddings", FWM__OPTION_SET, O(tie_embeddings), 0, 0, NULL,
     "lstm, fwm: the output matrix is the embedding matrix (needs\n"
     "--hidden equal to --embedding; the file stores both)", NULL, A_FWM | A_LSTM, NULL},
    TEXT("run:"),
    {"--run-dir", FWM__OPTION_STRING, S(run_dir), 0, 0, "DIR",
     "checkpoints, log.csv, curve.gp/png (default runs/<mode>;\n"
     "--arch lstm: runs/lstm-<mode>; mnm, gfw, stm:\n"
     "runs/ARCH-<mode>)", NULL, 0, NULL},
    {"--max-nonfinite", FWM__OPTION_INT, O(max_nonfinite), 0, 1 << 30, "N",
     "a window whose loss or gradient is not finite is skipped (no\n"
     "update, the lanes' state as before it); after N such windows\n"
     "in a row the run stops (default {}; 0: at the first)", NULL, 0, NULL},
    {"--resume", FWM__OPTION_SET, S(resume), 0, 0, NULL, "continue from <run-dir>/checkpoint.bin",
     NULL, 0, NULL},
    {"--force", FWM__OPTION_SET, S(force), 0, 0, NULL,
     "start over even though <run-dir>/checkpoint.bin exists\n"
     "(it is overwritten, log.csv restarts); without --resume or\n"
     "--force an existing checkpoint is refused", NULL, 0, NULL},
    {"--checkpoint-every", FWM__OPTION_LONG, O(checkpoint_every), 0, 1L << 40, "N",
     "steps between checkpoints (default {})", NULL, 0, NULL},
    {"--eval-every", FWM__OPTION_LONG, O(eval_every), 0, 1L << 40, "N",
     "steps between validation runs (default {}; 0 = never)", NULL, 0, NULL},
    {"--eval-lanes", FWM__OPTION_INT, O(eval.lanes), 1, 1 << 16, "B",
     "lanes of the validation run (default {})", NULL, 0, NULL},
    {"--eval-windows", FWM__OPTION_LONG, O(eval.max_windows), 0, 1L << 40, "N",
     "validate on the first N windows only (default {}: all)", NULL, 0, NULL},
    {"--test-lanes", FWM__OPTION_INT, S(test_lanes), 1, 1 << 16, "B",
     "lanes of the final test run (default {}, the paper's)", NULL, 0, NULL},
    {"--no-test", FWM__OPTION_CLEAR, S(run_test), 0, 0, NULL, "skip the final test run", NULL, 0,
     NULL},
    {"--out", FWM__OPTION_STRING, S(out_path), 0, 0, "FILE",
     "model file to write (default <run-dir>/model.gguf)", NULL, 0, NULL},
    {"--name", FWM__OPTION_STRING, S(model_name), 0, 0, "NAME",
     "the model's name in the file (general.name, what fwm-serve\n"
     "serves it as; default ARCH-MODE, e.g. fwm-catbabi-10k-lm)", NULL, 0, NULL},
    {"--progress", FWM__OPTION_DOUBLE, O(progress_seconds), 0, 1e9, "SECONDS",
     "progress line interval (default {}; 0 = quiet)", NULL, 0, NULL},
    TEXT("SIGINT or SIGTERM: stop at the next step boundary, write the checkpoint and exit 0\n"
         "(continue with --resume); a second signal stops at once. Under mpirun, signal any\n"
         "one rank (mpirun itself kills its processes soon after SIGTERM).\n"
         "mpirun -np N fwm-train ...: N processes share the lanes (this build: {mpi})."),
};
#undef S
#undef O
#undef TEXT
#undef MAX_DIM
#define OPTION_COUNT (sizeof options / sizeof options[0])

/* What --help's {key} markers stand for: the data folder, the defaults of other architectures. */
static void help_value(const char *key, char *buffer, size_t size)
{
    train_settings d;
    settings_defaults(&d);
    const fwm__train_options *o = &d.o;
    static const struct {
        const char *key;
        size_t offset; /* a uint32_t of fwm__train_options */
    } sizes[] = {
        {"lstm.embedding", offsetof(fwm__train_options, lstm.embedding_length)},
        {"mnm.embedding", offsetof(fwm__train_options, mnm.embedding_length)},
        {"gfw.embedding", offsetof(fwm__train_options, gfw.embedding_length)},
        {"stm.embedding", offsetof(fwm__train_options, stm.embedding_length)},
        {"fwm.hidden", offsetof(fwm__train_options, hp.hidden_size)},
        {"lstm.hidden", offsetof(fwm__train_options, lstm.hidden_size)},
        {"mnm.hidden", offsetof(fwm__train_options, mnm.hidden_size)},
        {"gfw.hidden", offsetof(fwm__train_options, gfw.fast_hidden)},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(key, sizes[i].key) == 0) {
            snprintf(buffer, size, "%u", *(const uint32_t *)((const char *)o + sizes[i].offset));
            return;
        }
    const char *text = strcmp(key, "data") == 0 ? fwm__default_data_dir()
                     : strcmp(key, "fwm.residual") == 0
                             ? (o->hp.residual ? " (default)" : " (off on catbAbI: default)")
                     : strcmp(key, "lstm.residual") == 0 ? (o->lstm.residual ? " (default)" : "")
                     : strcmp(key, "no-residual") == 0   ? (o->hp.residual ? "" : " (default for fwm)")
                     : strcmp(key, "mpi") == 0
                             ? (fwm__dist_available() ? "with MPI" : "without MPI, one process only")
                             : "";
    snprintf(buffer, size, "%s", text);
}

static int train_main(int argc, char **argv)
{
    train_settings s;
    settings_defaults(&s);
    /* --arch first, wherever it is: the size flags below set that architecture's sizes */
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--arch") == 0)
            s.arch_name = argv[i + 1];
    if (fwm__train_arch_parse(s.arch_name, &s.o.arch) != 0) {
        NOTE("error: --arch expects fwm, lstm, mnm, gfw or stm, got '%s'\n", s.arch_name);
        return 2;
    }
    unsigned char given[OPTION_COUNT];
    const fwm__options_parser parser = {options, OPTION_COUNT, &s, 1u << s.o.arch,
                                        dist.rank == 0 ? stderr : NULL,
                                        " (the name fwm-init uses too)", NULL};
    fwm__options_result parsed = {0, NULL, given};
    int parse_code = fwm__options_parse(&parser, argc, argv, &parsed);
    if (parse_code != 0)
        return parse_code;
    if (parsed.help) {
        train_settings defaults;
        settings_defaults(&defaults);
        fwm__options_help(stdout, options, OPTION_COUNT, 24, &defaults, help_value);
        return 0;
    }
    fwm__train_options o = s.o;
    fwm_hparams *hp = &o.hp;
    fwm_lstm_hparams *lh = &o.lstm;
    fwm_mnm_hparams *mh = &o.mnm;
    fwm_gfw_hparams *gh = &o.gfw;
    fwm_stm_hparams *sh = &o.stm;
    const char *arch_name = s.arch_name, *task_name = s.task_name, *protocol = s.protocol;
    const char *data_dir = s.data_dir, *set = s.set, *mode_name = s.mode_name;
    const char *run_dir = s.run_dir, *out_path = s.out_path, *model_name = s.model_name;
    fwm__ar_config ar = s.ar;
    uint32_t vocab_size = s.vocab_size;
    int resume = s.resume, force = s.force, run_test = s.run_test, test_lanes = s.test_lanes;
    int mode_given = fwm__options_given(&parser, &parsed, "--mode");
    int vocab_size_given = fwm__options_given(&parser, &parsed, "--vocab-size");
    int train_output_given = fwm__options_given(&parser, &parsed, "--train-output");
    int dropout_given = fwm__options_given(&parser, &parsed, "--dropout-token") ||
                        fwm__options_given(&parser, &parsed, "--dropout-embedding") ||
                        fwm__options_given(&parser, &parsed, "--dropout-recurrent") ||
                        fwm__options_given(&parser, &parsed, "--dropout-layer");
    const char *wrong_flag = parsed.misplaced; /* a size flag of another architecture */
    int lstm = o.arch == FWM_ARCH_LSTM, mnm = o.arch == FWM_ARCH_MNM, gfw = o.arch == FWM_ARCH_GFW;
    int stm = o.arch == FWM_ARCH_STM;
    if (wrong_flag) {
        NOTE("error: %s does not apply to --arch %s\n", wrong_flag, arch_name);
        return 2;
    }
    if (o.tie_embeddings) {
        uint32_t E = lstm ? lh->embedding_length : hp->embedding_length;
        uint32_t H = lstm ? lh->hidden_size : hp->hidden_size;
        if (E != H) {
            NOTE("error: --tie-embeddings needs --hidden (%u) equal to --embedding (%u): the "
                 "output matrix, [V, H], is the embedding matrix, [V, E]\n",
                 H, E);
            return 2;
        }
    }
    if (dropout_given && (mnm || gfw || stm)) {
        NOTE("error: the --dropout-* options are for --arch lstm and fwm (the MNM, gfw and the STM "
             "have none)\n");
        return 2;
    }
    o.adam.decay_end = o.steps;
    if (o.adam.decay_start >= o.steps) {
        NOTE("error: --decay-from %ld must be below --steps %ld\n", o.adam.decay_start,
                o.steps);
        return 2;
    }
    if (o.lane_groups == 0 && dist.size > o.lanes) {
        NOTE("error: %d processes but --lanes %d: each process needs a lane\n", dist.size, o.lanes);
        return 2;
    }
    if (o.lane_groups > 0 && (o.lane_groups < dist.size || o.lane_groups > o.lanes)) {
        NOTE("error: --lane-groups %d must be between the number of processes (%d: each trains at "
             "least one group) and --lanes (%d)\n",
             o.lane_groups, dist.size, o.lanes);
        return 2;
    }
    int task_ar = strcmp(task_name, "ar") == 0, task_text = strcmp(task_name, "text") == 0;
    if (!task_ar && !task_text && strcmp(task_name, "catbabi") != 0) {
        NOTE("error: --task expects catbabi, ar or text, got '%s'\n", task_name);
        return 2;
    }
    if (vocab_size_given && !task_text) {
        NOTE("error: --vocab-size is for --task text (catbAbI and ar have fixed vocabularies)\n");
        return 2;
    }
    if (task_text && !data_dir) {
        NOTE("error: --task text needs --data DIR, a folder with train.txt, valid.txt and "
             "test.txt\n");
        return 2;
    }
    if (task_text && (mode_given || strcmp(protocol, "catbabi") != 0)) {
        NOTE("error: --mode and --protocol are for --task catbabi; --task text takes the loss at "
             "every word\n");
        return 2;
    }
    int standard = strcmp(protocol, "standard") == 0;
    if (!standard && strcmp(protocol, "catbabi") != 0) {
        NOTE("error: --protocol expects catbabi or standard, got '%s'\n", protocol);
        return 2;
    }
    if (task_ar && standard) {
        NOTE("error: --protocol standard is for the bAbI tasks, not --task ar\n");
        return 2;
    }
    if (task_ar && mode_given) {
        NOTE("error: --mode is for --task catbabi; --task ar takes the loss at every target\n");
        return 2;
    }
    int stm_sentence = stm && sh->input_mode == FWM_STM_INPUT_SENTENCE;
    if (stm_sentence && (task_ar || task_text)) {
        NOTE("error: --arch stm --input sentence reads sentences ending in \".\" and \"?\": it is "
             "for the bAbI tasks, not --task ar (use --input word)\n");
        return 2;
    }
    if (stm_sentence && mode_given && strcmp(mode_name, "qm") != 0) {
        NOTE("error: --mode %s does not apply to --arch stm --input sentence: it predicts only at "
             "question ends, where its loss is taken (--mode qm, its default)\n",
             mode_name);
        return 2;
    }
    if (stm_sentence)
        mode_name = "qm";
    if (train_output_given && !stm_sentence) {
        NOTE("error: --train-output is for --arch stm --input sentence (the output matrix Z; word "
             "mode's output always trains)\n");
        return 2;
    }
    if (task_ar || task_text) {
        o.mode = FWM__LOSS_INPUT;
        mode_name = task_ar ? "ar" : "text";
        o.report_perplexity = task_text;
    } else if (strcmp(mode_name, "lm") == 0)
        o.mode = FWM__LOSS_LM;
    else if (strcmp(mode_name, "qm") == 0)
        o.mode = FWM__LOSS_QM;
    else {
        NOTE("error: --mode expects lm or qm, got '%s'\n", mode_name);
        return 2;
    }
    if (model_name) {
        size_t len = strlen(model_name), k = 0;
        while (k < len && (unsigned char)model_name[k] >= 0x20 && model_name[k] != 0x7f)
            k++;
        if (len == 0 || len > 63 || k < len) {
            NOTE("error: --name expects 1 to 63 bytes without control characters, got %zu byte(s)%s\n",
                 len, k < len ? " with a control character" : "");
            return 2;
        }
    }
    if (!data_dir)
        data_dir = fwm__default_data_dir();
    char default_run[64], default_out[4200];
    if (!run_dir) {
        snprintf(default_run, sizeof default_run,
                 lstm  ? "runs/lstm-%s"
                 : mnm ? "runs/mnm-%s"
                 : gfw ? "runs/gfw-%s"
                 : stm ? "runs/stm-%s"
                       : "runs/%s",
                 mode_name);
        run_dir = default_run;
    }
    if (!out_path) {
        snprintf(default_out, sizeof default_out, "%s/model.gguf", run_dir);
        out_path = default_out;
    }
    char checkpoint_path[4200];
    snprintf(checkpoint_path, sizeof checkpoint_path, "%s/checkpoint.bin", run_dir);
    struct stat checkpoint_stat; /* rank 0's run folder decides */
    int32_t checkpoint_exists = stat(checkpoint_path, &checkpoint_stat) == 0;
    fwm__dist_bcast(&dist, &checkpoint_exists, sizeof checkpoint_exists);
    if (checkpoint_exists && !resume && !force) { /* every rank knows (rank 0 told them) */
        NOTE("error: %s exists: a run is already there. Continue it with --resume, start over "
             "with --force (which overwrites it), or choose another --run-dir\n",
             checkpoint_path);
        return dist.size > 1 ? 2 : 1; /* 2: ends every rank alike, without MPI_Abort */
    }
    if (resume && force) {
        NOTE("error: --resume and --force contradict each other: give one\n");
        return 2;
    }
    if (force && checkpoint_exists)
        NOTE("note: --force: starting over; %s will be overwritten\n", checkpoint_path);
    if (dist.rank == 0 && make_dir(run_dir) != 0) {
        fprintf(stderr, "error: cannot create run folder %s: %s\n", run_dir, strerror(errno));
        return 1;
    }

    int exit_code = 1;
    fwm_error err;
    fwm__catbabi data;
    fwm__trainer *tr = NULL;
    const char *folder = fwm__data_folder(set);
    fwm__text_stats text_stats;
    if (task_text) {
        NOTE("reading text from %s\n", data_dir);
        if (fwm__text_load(&data, data_dir, vocab_size, &text_stats, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            return 1;
        }
        NOTE("  %zu distinct training words; vocabulary %u (%u words + <pad> <eos> <unk>)\n",
             text_stats.distinct_train, data.vocab.count, data.vocab.count - 3);
        for (int s = 0; s < FWM__SPLIT_COUNT; s++)
            NOTE("  %-5s %9zu tokens, <unk> %.2f%%\n", fwm__split_names[s], text_stats.tokens[s],
                 100.0 * (double)text_stats.unknown[s] / (double)text_stats.tokens[s]);
    } else if (task_ar) {
        NOTE("associative retrieval task, seed %llu\n", (unsigned long long)ar.seed);
        if (fwm__ar_load(&data, &ar, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            return 2;
        }
        for (int s = 0; s < FWM__SPLIT_COUNT; s++)
            NOTE("  %-5s %7zu queries %9zu characters\n", fwm__split_names[s],
                 data.splits[s].n_questions, data.splits[s].n_words);
    } else {
        NOTE("reading %s/%s\n", data_dir, folder);
        if (fwm__catbabi_load(&data, data_dir, folder, NULL,
                              dist.rank == 0 ? fwm__print_message : NULL, NULL, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            return 1;
        }
        for (int s = 0; s < FWM__SPLIT_COUNT; s++)
            NOTE("  %-5s %6zu stories %7zu questions %9zu tokens\n", fwm__split_names[s],
                 data.splits[s].n_samples, data.splits[s].n_questions,
                 data.splits[s].n_words + data.splits[s].n_samples);
        if (standard) { /* a sample per question, each from the reset state */
            if (fwm__catbabi_to_standard(&data, &data.vocab, &err) != FWM_OK) {
                fprintf(stderr, "error: %s\n", err.message);
                fwm__catbabi_release(&data);
                return 1;
            }
            for (int s = 0; s < FWM__SPLIT_COUNT; s++)
                NOTE("  standard protocol: %-5s %7zu samples %9zu tokens\n",
                     fwm__split_names[s], data.splits[s].n_samples,
                     data.splits[s].n_words + data.splits[s].n_samples);
            o.reset_per_sample = 1;
            o.eval.reset_per_sample = 1;
            o.eval.window = 64; /* samples of ~60 words: less padding (the figures are the same) */
        }
    }
    hp->vocab_size = data.vocab.count;
    hp->padding_token_id = data.pad_id;
    hp->eos_token_id = data.eos_id;
    hp->read_policy = o.mode == FWM__LOSS_QM ? FWM_READ_ON_TOKEN : FWM_READ_ALWAYS;
    hp->read_token_id = o.mode == FWM__LOSS_QM ? data.qmark_id : 0;
    hp->write_scale = 1.0f / (float)hp->memory_t;
    lh->vocab_size = data.vocab.count;
    lh->padding_token_id = data.pad_id;
    lh->eos_token_id = data.eos_id;
    mh->vocab_size = data.vocab.count;
    mh->padding_token_id = data.pad_id;
    mh->eos_token_id = data.eos_id;
    gh->vocab_size = data.vocab.count; /* V from the data */
    gh->padding_token_id = data.pad_id;
    gh->eos_token_id = data.eos_id;
    sh->vocab_size = data.vocab.count;
    sh->padding_token_id = data.pad_id;
    sh->eos_token_id = data.eos_id;
    if (stm) { /* the end words from the data's vocabulary ("." and "?") */
        uint32_t dot = fwm__train_vocab_find(&data.vocab, ".");
        sh->statement_end_token_id = dot != FWM__TRAIN_VOCAB_NONE ? dot : data.pad_id;
        sh->question_end_token_id = data.qmark_id;
    }
    o.qmark_id = data.qmark_id;
    o.run_dir = run_dir;
    fwm__model_spec spec; /* what is trained, for evaluation and the model file */
    memset(&spec, 0, sizeof spec);
    spec.arch = o.arch;
    if (lstm) {
        spec.lstm = *lh;
        NOTE("vocabulary %u words; LSTM E=%u H=%u L=%u%s; dropout token %g embedding %g "
             "recurrent %g layer %g; mode %s; B=%d W=%d; %d thread(s)\n",
             lh->vocab_size, lh->embedding_length, lh->hidden_size, lh->layer_count,
             lh->residual ? " residual" : "", (double)o.dropout.token,
             (double)o.dropout.embedding, (double)o.dropout.recurrent, (double)o.dropout.layer,
             mode_name, o.lanes, o.window, o.threads);
        if (fwm__lstm_hparams_valid(lh, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            fwm__catbabi_release(&data);
            return 2;
        }
    } else if (mnm) {
        spec.mnm = *mh;
        NOTE("vocabulary %u words; MNM E=%u H=%u heads=%u d_k=%u d_v=%u memory %u x %u d_o=%u; "
             "meta weight %g; mode %s; B=%d W=%d; %d thread(s)\n",
             mh->vocab_size, mh->embedding_length, mh->hidden_size, mh->head_count,
             mh->key_length, mh->value_length, mh->memory_layers, mh->memory_hidden,
             mh->output_length, o.meta_weight, mode_name, o.lanes, o.window, o.threads);
        if (fwm__mnm_hparams_valid(mh, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            fwm__catbabi_release(&data);
            return 2;
        }
    } else if (gfw) {
        spec.gfw = *gh;
        NOTE("vocabulary %u words; gfw E=%u fast m=%u slow N=%u P=%u (fast matrices %llu + %llu "
             "floats per lane); mode %s; B=%d W=%d; %d thread(s)\n",
             gh->vocab_size, gh->embedding_length, gh->fast_hidden, gh->slow_hidden,
             gh->slow_inner, (unsigned long long)(gh->fast_hidden * fwm__gfw_f1_cols(gh)),
             (unsigned long long)(gh->fast_hidden * fwm__gfw_f2_cols(gh)), mode_name, o.lanes,
             o.window, o.threads);
        if (fwm__gfw_hparams_valid(gh, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            fwm__catbabi_release(&data);
            return 2;
        }
    } else if (stm) {
        spec.stm = *sh;
        uint64_t state = fwm__stm_hparams_state_floats(sh);
        NOTE("vocabulary %u words; STM %s mode E=%u P=%u d=%u n_q=%u n_r=%u H_a=%u reset_on_eos %s "
             "(memories %llu floats per lane); alpha1, alpha3 %s; Z %s; mode %s; B=%d W=%d; %d "
             "thread(s)\n",
             sh->vocab_size, stm_sentence ? "sentence" : "word", sh->embedding_length,
             sh->sentence_length, sh->memory_size, sh->query_count, sh->relation_length,
             sh->answer_hidden, sh->reset_on_eos ? "on" : "off", (unsigned long long)state,
             o.stm_fix_alpha ? "held" : "trained",
             !stm_sentence ? "-" : o.stm_train_output ? "trained" : "held", mode_name, o.lanes,
             o.window, o.threads);
        if (fwm__stm_hparams_valid(sh, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            fwm__catbabi_release(&data);
            return 2;
        }
    } else {
        spec.fwm = *hp;
        NOTE("vocabulary %u words; model E=%u H=%u L=%u S=%u R=%u T=%u N_r=%u; dropout token %g "
             "embedding %g recurrent %g layer %g; mode %s; B=%d W=%d; %d thread(s)\n",
             hp->vocab_size, hp->embedding_length, hp->hidden_size,
             hp->block_count > 1 ? (unsigned)hp->block_count : 1u, hp->memory_s, hp->memory_r,
             hp->memory_t, hp->read_count, (double)o.dropout.token, (double)o.dropout.embedding,
             (double)o.dropout.recurrent, (double)o.dropout.layer, mode_name, o.lanes, o.window,
             o.threads);
        if (fwm__hparams_check(hp, FWM_ERR_INVALID_ARGUMENT, &err) != FWM_OK) {
            fprintf(stderr, "error: %s%s\n", err.message,
                    task_text ? " (--vocab-size sets the vocabulary of --task text)" : "");
            fwm__catbabi_release(&data);
            return 2;
        }
    }

    o.stop_requested = &stop_signal;
    install_stop_handlers();
    fwm__blas_use_one_thread();
    if (fwm__trainer_create(&o, &data.splits[FWM__SPLIT_TRAIN], &data.splits[FWM__SPLIT_VALID],
                            data.pad_id, data.eos_id, NULL, &tr, &err) != FWM_OK)
        goto fail;
    NOTE("%zu parameters; %zu windows per epoch\n", tr->net->layout.parameter_count,
         fwm__catbabi_window_count(&tr->stream, o.window));
    if (dist.size > 1) {
        /* every rank read its own copy of the data: it must be rank 0's */
        uint64_t hash = tr->data_hash;
        fwm__dist_bcast(&dist, &hash, sizeof hash);
        if (fwm__dist_any(&dist, hash != tr->data_hash)) {
            fwm__error(&err, FWM_ERR_FORMAT,
                       "the training data read by rank %d differs from rank 0's (every machine "
                       "needs the same bAbI files at --data)",
                       dist.rank);
            goto fail;
        }
        size_t lanes_here = 0;
        for (int g = tr->group_begin; g < tr->group_end; g++)
            lanes_here += (size_t)(tr->group_lane[g + 1] - tr->group_lane[g]);
        NOTE("%d processes: %d lane groups, %zu lanes on rank 0, %d thread(s) each; %zu bytes of "
             "gradients exchanged per step\n",
             dist.size, tr->n_groups, lanes_here, o.threads,
             (size_t)tr->n_groups * tr->net->layout.total * sizeof(float));
    }
    if (resume) {
        if (!checkpoint_exists) {
            NOTE("note: no checkpoint at %s: starting from step 0\n", checkpoint_path);
        } else {
            if (fwm__trainer_load_checkpoint(tr, checkpoint_path, &err) != FWM_OK)
                goto fail;
            NOTE("resumed from %s at step %ld (epoch %ld)\n", checkpoint_path, tr->step,
                 tr->epoch);
        }
    }
    if (dist.rank == 0 && !(resume && checkpoint_exists)) { /* a fresh start: no earlier run's best */
        char best[4200];
        for (int k = 0; k < 2; k++) {
            snprintf(best, sizeof best, "%s/best/%s", run_dir, k ? "checkpoint.bin" : "best.txt");
            if (remove(best) != 0 && errno != ENOENT) {
                fwm__error(&err, FWM_ERR_IO, "cannot remove %s: %s", best, strerror(errno));
                goto fail;
            }
        }
    }
    if (dist.rank == 0 && force && checkpoint_exists) { /* starting over: the old run's log goes (data loaded fine) */
        char log_path[4200];
        snprintf(log_path, sizeof log_path, "%s/log.csv", run_dir);
        if (remove(log_path) != 0 && errno != ENOENT) {
            fwm__error(&err, FWM_ERR_IO, "cannot remove %s: %s", log_path, strerror(errno));
            goto fail;
        }
    }
    if (fwm__trainer_run(tr, &err) != FWM_OK)
        goto fail;
    if (tr->stopped) {
        NOTE(
                "stopped by %s at step %ld of %ld: checkpoint written to %s; continue with --resume\n",
             stop_signal == SIGINT  ? "SIGINT"
             : stop_signal == 0     ? "a signal to another rank"
                                    : "SIGTERM",
             tr->step, o.steps, checkpoint_path);
        exit_code = 0;
        goto done;
    }

    if (dist.rank != 0) { /* rank 0 evaluates and writes the model */
        exit_code = 0;
        goto done;
    }
    /* final figures: valid in full, test with one lane over the whole stream */
    fwm__qa_metrics valid, test;
    memset(&test, 0, sizeof test);
    fwm__eval_options full = o.eval;
    full.max_windows = 0;
    if (task_ar || task_text) { /* every metric printed; the answers' (partial) part recorded */
        fwm__seq_metrics seq;
        if (fwm__evaluate_seq(&spec, tr->net->params, &data.splits[FWM__SPLIT_VALID],
                              data.pad_id, &full, tr->pool, &seq, &err) != FWM_OK)
            goto fail;
        if (task_text)
            fwm__print_text_perplexity(stdout, "valid", &seq, full.lanes);
        else
            fwm__print_seq_table(stdout, "valid (associative retrieval)", &seq);
        fwm__seq_metrics_to_qa(&seq, &valid);
        if (run_test) {
            fwm__eval_options test_options = full;
            test_options.lanes = test_lanes;
            fprintf(stderr, "testing with %d lane(s) over the whole test stream\n", test_lanes);
            if (fwm__evaluate_seq(&spec, tr->net->params, &data.splits[FWM__SPLIT_TEST],
                                  data.pad_id, &test_options, tr->pool, &seq, &err) != FWM_OK)
                goto fail;
            if (task_text)
                fwm__print_text_perplexity(stdout, "test", &seq, test_lanes);
            else
                fwm__print_seq_table(stdout, "test (associative retrieval)", &seq);
            fwm__seq_metrics_to_qa(&seq, &test);
        }
    } else {
        if (fwm__evaluate(&spec, tr->net->params, &data.splits[FWM__SPLIT_VALID], data.pad_id,
                          data.eos_id, data.qmark_id, &full, tr->pool, &valid, &err) != FWM_OK)
            goto fail;
        fwm__print_task_table(stdout, "valid accuracy at \"?\" per task", &valid);
        if (standard)
            fwm__print_mean_error(stdout, &valid);
        if (run_test) {
            fwm__eval_options test_options = full;
            test_options.lanes = test_lanes;
            fprintf(stderr, "testing with %d lane(s) over the whole test stream\n", test_lanes);
            if (fwm__evaluate(&spec, tr->net->params, &data.splits[FWM__SPLIT_TEST], data.pad_id,
                              data.eos_id, data.qmark_id, &test_options, tr->pool, &test,
                              &err) != FWM_OK)
                goto fail;
            fwm__print_task_table(stdout, "test accuracy at \"?\" per task", &test);
            if (standard)
                fwm__print_mean_error(stdout, &test);
        }
    }
    char dataset[4400];
    if (task_text)
        snprintf(dataset, sizeof dataset,
                 "text from %s (train.txt %zu tokens), vocabulary of %u training words, docs/TEXT.md",
                 data_dir, text_stats.tokens[FWM__SPLIT_TRAIN], data.vocab.count - 3);
    else if (task_ar)
        snprintf(dataset, sizeof dataset,
                 "associative retrieval (seq2seq, Gated Fast Weights paper), seed %llu, %zu/%zu/%zu "
                 "queries, 1..%d storages",
                 (unsigned long long)ar.seed, ar.queries[0], ar.queries[1], ar.queries[2],
                 ar.max_storages);
    else if (standard)
        snprintf(dataset, sizeof dataset,
                 "bAbI v1.2 %s, standard protocol (a sample per question, from the reset state)",
                 folder);
    else
        snprintf(dataset, sizeof dataset, "catbAbI from bAbI v1.2 %s", folder);
    fwm_write_kv extra[8];
    memset(extra, 0, sizeof extra);
    size_t n_extra = 0;
    extra[n_extra].key = "fwm.training.mode";
    extra[n_extra].kind = FWM_WRITE_KV_STRING;
    extra[n_extra++].value.string = mode_name;
    extra[n_extra].key = "fwm.training.steps";
    extra[n_extra].kind = FWM_WRITE_KV_U64;
    extra[n_extra++].value.u64 = (uint64_t)tr->step;
    extra[n_extra].key = "fwm.training.dataset";
    extra[n_extra].kind = FWM_WRITE_KV_STRING;
    extra[n_extra++].value.string = dataset;
    if (task_text) { /* prose: the text rules, <unk>, and perplexities */
        extra[n_extra].key = FWM_KEY_TOKENIZER_MODEL;
        extra[n_extra].kind = FWM_WRITE_KV_STRING;
        extra[n_extra++].value.string = "text";
        extra[n_extra].key = FWM_KEY_UNKNOWN_TOKEN;
        extra[n_extra].kind = FWM_WRITE_KV_U32;
        extra[n_extra++].value.u32 = FWM__TEXT_UNK_ID;
    }
    extra[n_extra].key = task_text ? "fwm.training.valid_perplexity" : "fwm.training.valid_accuracy";
    extra[n_extra].kind = FWM_WRITE_KV_F32;
    extra[n_extra++].value.f32 = (float)(task_text ? fwm__metrics_perplexity(&valid)
                                                   : fwm__metrics_accuracy(&valid));
    if (run_test) {
        extra[n_extra].key = task_text ? "fwm.training.test_perplexity" : "fwm.training.test_accuracy";
        extra[n_extra].kind = FWM_WRITE_KV_F32;
        extra[n_extra++].value.f32 = (float)(task_text ? fwm__metrics_perplexity(&test)
                                                       : fwm__metrics_accuracy(&test));
    }
    char name[64];
    if (model_name)
        snprintf(name, sizeof name, "%s", model_name);
    else if (task_ar || task_text)
        snprintf(name, sizeof name, "%s-%s", fwm__train_arch_name(o.arch), mode_name);
    else
        snprintf(name, sizeof name, "%s-%s-%s-%s", fwm__train_arch_name(o.arch),
                 standard ? "babi" : "catbabi", set, mode_name);
    if (fwm__model_save_spec(out_path, &spec, tr->net->params,
                             (const char *const *)data.vocab.words, name, extra, n_extra,
                             &err) != FWM_OK)
        goto fail;
    char took[32];
    fwm__format_duration(tr->seconds, took, sizeof took);
    if (task_text) {
        printf("wrote %s: %ld steps, %ld tokens, %s of training; valid perplexity %.2f", out_path,
               tr->step, tr->tokens, took, fwm__metrics_perplexity(&valid));
        if (run_test)
            printf(", test perplexity %.2f", fwm__metrics_perplexity(&test));
        printf("\n");
    } else {
        printf("wrote %s: %ld steps, %ld tokens, %s of training; valid %.2f%%%s", out_path,
               tr->step, tr->tokens, took, 100 * fwm__metrics_accuracy(&valid),
               run_test ? ", test " : "\n");
        if (run_test)
            printf("%.2f%%\n", 100 * fwm__metrics_accuracy(&test));
    }
    exit_code = 0;
    goto done;
fail:
    if (dist.size > 1)
        fprintf(stderr, "error (rank %d of %d): %s\n", dist.rank, dist.size, err.message);
    else
        fprintf(stderr, "error: %s\n", err.message);
done:
    fwm__trainer_free(tr);
    fwm__catbabi_release(&data);
    return exit_code;
}

int main(int argc, char **argv)
{
    fwm__blas_choose_kernels(argv);
    fwm__dist_init(&argc, &argv, &dist);
    int code = train_main(argc, argv);
    /* 2: a bad command line, found by every rank before any exchange; any other failure may be
     * one rank's alone while the others wait for it in an exchange */
    if (code != 0 && code != 2 && dist.size > 1)
        fwm__dist_abort(&dist, code);
    fwm__dist_finalize(&dist);
    return code;
}
