/* train_main.c - fwm-train: train an FWM (or, with --arch, the paper's LSTM or MNM baseline, the
 * Gated Fast Weights model or the STM) on catbAbI (or, with --task ar, the associative retrieval task of
 * ar_task.h) and write a model file.
 *
 * Reads bAbI v1.2 (--data, --set), builds the vocabulary and the streams (catbabi_stream.h),
 * trains with truncated BPTT and Adam (trainer.h), evaluates on valid during training and on test
 * with one lane at the end, and writes the model with its provenance keys. --resume continues
 * from <run-dir>/checkpoint.bin. Run with --help for the options.
 *
 * Under mpirun (a build with MPI, distributed.h) every process runs this program: they read the
 * same options and data, train their share of the lane groups (trainer.h), and rank 0 alone prints
 * the run's messages, evaluates, and writes the run folder and the model file. A failure on any
 * rank after the start ends every rank (fwm__dist_abort), so none waits forever for another.
 */
#include <errno.h>
#include <signal.h>
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
#include "progress.h"
#include "text_corpus.h"
#include "trainer.h"

static void usage(FILE *out)
{
    fwm_hparams d; /* the defaults shown are the one definition's (FWM_HPARAM_LIST) */
    fwm__hparams_defaults(&d);
    fwm_lstm_hparams ld; /* and FWM_LSTM_HPARAM_LIST's */
    fwm_lstm_hparams_defaults(&ld);
    fwm_mnm_hparams md; /* and FWM_MNM_HPARAM_LIST's */
    fwm_mnm_hparams_defaults(&md);
    fwm_gfw_hparams gd; /* and FWM_GFW_HPARAM_LIST's */
    fwm_gfw_hparams_defaults(&gd);
    fwm_stm_hparams sd; /* and FWM_STM_HPARAM_LIST's */
    fwm_stm_hparams_defaults(&sd);
    fprintf(out,
            "usage: fwm-train [options]\n"
            "Train a Fast Weight Memory model (or the LSTM or MNM baseline, the Gated Fast\n"
            "Weights model or the STM) on catbAbI (or the standard bAbI protocol, or the associative\n"
            "retrieval task) and write a model file.\n\n"
            "data:\n"
            "  --task catbabi|ar|text  catbAbI (default), the associative retrieval task of the\n"
            "                        Gated Fast Weights paper (docs/AR_TASK.md: generated; loss\n"
            "                        at every target; no --mode), or language modelling on plain\n"
            "                        text: --data DIR holds train.txt, valid.txt and test.txt,\n"
            "                        split into words by docs/TEXT.md's rules (loss at every\n"
            "                        word; perplexity; no --mode)\n"
            "  --vocab-size N        --task text: keep the N most frequent training words (plus\n"
            "                        <pad>, <eos> and <unk>); default: every training word\n"
            "  --data DIR            bAbI v1.2 folder (default: %s)\n"
            "  --set 10k|1k|FOLDER   catbAbI-10k (en-valid-10k, default) or 1k (en-valid)\n"
            "  --protocol catbabi|standard   catbabi: the stories concatenated, the state carried\n"
            "                        (default); standard: a sample per question (the story's\n"
            "                        statements before it, then the question), each from the\n"
            "                        reset state at a window boundary of its lane\n"
            "associative retrieval (--task ar):\n" FWM__AR_OPTIONS_HELP
            "training:\n"
            "  --mode lm|qm          lm: loss on every token, read every step (default);\n"
            "                        qm: loss and read only at \"?\"\n"
            "  --steps N             total steps (windows) to train (default 30000)\n"
            "  --lanes B             batch: independent lanes (default 32)\n"
            "  --window W            truncated-BPTT window (default 200)\n"
            "  --lr X --beta1 X --beta2 X --eps X   Adam (defaults 1e-3 0.9 0.999 1e-8)\n"
            "  --clip X              clip the gradient norm to X (default 0: off)\n"
            "  --warmup N            linear learning-rate warm-up steps (default 0)\n"
            "  --decay-from N        from step N to the last step (--steps) the lr falls along a\n"
            "                        cosine to --lr-final (default 0: constant lr, the paper's)\n"
            "  --lr-final X          the lr reached at the last step (default 1e-4)\n"
            "  --seed N              initialisation and shuffling seed (default 1)\n"
            "  --threads N           threads per process (default: all CPUs, shared among the\n"
            "                        processes of a run on one machine); results depend on N\n"
            "  --lane-groups G       train the lanes as G groups whose gradients are added in\n"
            "                        group order (default: 1, or one per process under mpirun);\n"
            "                        results depend on G, not on the number of processes\n"
            "architecture:\n"
            "  --arch fwm|lstm|mnm|gfw|stm  fwm: the Fast Weight Memory (default); lstm: the\n"
            "                        paper's LSTM baseline (stacked layers, no memory); mnm: the\n"
            "                        Metalearned Neural Memory baseline (MNM-p, docs/MODEL.md);\n"
            "                        gfw: Gated Fast Weights (Schlag & Schmidhuber, docs/MODEL.md);\n"
            "                        stm: the self-attentive associative memory (Le et al. 2020,\n"
            "                        docs/MODEL.md)\n"
            "model (the paper's sizes by default, as fwm-init's):\n"
            "  --embedding E         token embedding size (default %u; lstm %u; mnm %u; gfw %u;\n"
            "                        stm %u)\n"
            "  --hidden H            LSTM hidden size (default %u; lstm %u; mnm %u); gfw: the\n"
            "                        fast net's h_F and inner layer, m >= 2 (default %u)\n"
            "  --layers L            lstm: stacked LSTM layers (default %u); fwm: the stacked\n"
            "                        FWM, L - 1 LSTM layers below the FWM's own (1 to 8,\n"
            "                        default 1)\n"
            "  --memory-s S          fast-weight key 1 size (default %u)\n"
            "  --memory-r R          fast-weight key 2 size (default %u)\n"
            "  --memory-t T          fast-weight value size (default %u)\n"
            "  --reads N             chained reads per step; N > 1 needs S == T (default %u)\n"
            "  --residual            fwm: add h to the read-out%s;\n"
            "                        lstm: layers >= 1 add their input to their output%s\n"
            "  --no-residual         no residual%s\n"
            "  --embed, --mem-s, --mem-r, --mem-t   deprecated aliases of --embedding, --memory-s,\n"
            "                        --memory-r, --memory-t (still accepted)\n"
            "  mnm (fwm-init's names; no --residual):\n"
            "  --heads N             read and write heads (default %u)\n"
            "  --key-length K        keys and the rate vector (default %u)\n"
            "  --value-length V      values and the read-out (default %u)\n"
            "  --memory-hidden D     the memory net's hidden layers (default %u)\n"
            "  --memory-layers L     the memory net's weight matrices (default %u)\n"
            "  --output-length O     the controller's output y (default %u)\n"
            "  --meta-weight X       the meta-objective's coefficient in the loss (default %g)\n"
            "  gfw (fwm-init's names; --embedding, --hidden as above):\n"
            "  --slow-hidden N       the slow net's state h_S (default %u)\n"
            "  --slow-inner P        the slow net's transition layer (default %u)\n"
            "  stm (fwm-init's names; --embedding as above; the bAbI sizes by default):\n"
            "  --input sentence|word sentence: a step per sentence, answers at \"?\" (the paper's\n"
            "                        bAbI model; the loss only at question ends, so --mode qm,\n"
            "                        its default; --mode lm is refused); word: a step and a\n"
            "                        prediction at every word (default sentence)\n"
            "  --sentence-length P   words of a sentence encoded (default %u)\n"
            "  --memory-size d       item memory d x d, relational n_q x d x d (default %u)\n"
            "  --queries N           n_q (default %u)\n"
            "  --relation-length N   n_r, the word-mode output per query (default %u)\n"
            "  --answer-hidden N     the answer module's MLPs, sentence mode (default %u)\n"
            "  --reset-on-eos on|off <eos> restores the reset state (default on)\n"
            "  --fix-alpha on|off    hold alpha1 and alpha3 at their values (the authors' bAbI\n"
            "                        setting: 1 and 0, no relational transfer); default off: all\n"
            "                        three train\n"
            "  --train-output on|off sentence mode: train the output matrix Z; default off: Z\n"
            "                        keeps its initial draw, as in the authors' code\n"
            "regularisation (lstm only; AWD-LSTM style, all 0 = off by default, never at\n"
            "evaluation; masks drawn from --seed, the step and the lane):\n"
            "  --dropout-token P     drop whole words of the input (every occurrence in a window)\n"
            "  --dropout-embedding P drop embedding elements (one mask per lane per window)\n"
            "  --dropout-recurrent P DropConnect on every layer's W_hh (one mask per window)\n"
            "  --dropout-layer P     between layers (one mask per lane per layer per window)\n"
            "  --embedding-init X    lstm, fwm: draw the embedding from U(-X, X) instead of the\n"
            "                        architecture's own initialisation (AWD-LSTM: 0.1)\n"
            "  --tie-embeddings      lstm, fwm: the output matrix is the embedding matrix (needs\n"
            "                        --hidden equal to --embedding; the file stores both)\n"
            "run:\n"
            "  --run-dir DIR         checkpoints, log.csv, curve.gp/png (default runs/<mode>;\n"
            "                        --arch lstm: runs/lstm-<mode>; mnm, gfw, stm:\n"
            "                        runs/ARCH-<mode>)\n"
            "  --max-nonfinite N     a window whose loss or gradient is not finite is skipped (no\n"
            "                        update, the lanes' state as before it); after N such windows\n"
            "                        in a row the run stops (default 10; 0: at the first)\n"
            "  --resume              continue from <run-dir>/checkpoint.bin\n"
            "  --force               start over even though <run-dir>/checkpoint.bin exists\n"
            "                        (it is overwritten, log.csv restarts); without --resume or\n"
            "                        --force an existing checkpoint is refused\n"
            "  --checkpoint-every N  steps between checkpoints (default 500)\n"
            "  --eval-every N        steps between validation runs (default 1000; 0 = never)\n"
            "  --eval-lanes B        lanes of the validation run (default 100)\n"
            "  --eval-windows N      validate on the first N windows only (default 0: all)\n"
            "  --test-lanes B        lanes of the final test run (default 1, the paper's)\n"
            "  --no-test             skip the final test run\n"
            "  --out FILE            model file to write (default <run-dir>/model.gguf)\n"
            "  --progress SECONDS    progress line interval (default 10; 0 = quiet)\n"
            "SIGINT or SIGTERM: stop at the next step boundary, write the checkpoint and exit 0\n"
            "(continue with --resume); a second signal stops at once. Under mpirun, signal any\n"
            "one rank (mpirun itself kills its processes soon after SIGTERM).\n"
            "mpirun -np N fwm-train ...: N processes share the lanes (this build: %s).\n",
            fwm__default_data_dir(), d.embedding_length, ld.embedding_length,
            md.embedding_length, gd.embedding_length, sd.embedding_length, d.hidden_size, ld.hidden_size,
            md.hidden_size, gd.fast_hidden, ld.layer_count,
            d.memory_s, d.memory_r, d.memory_t, d.read_count,
            d.residual ? " (default)" : " (off on catbAbI: default)",
            ld.residual ? " (default)" : "", d.residual ? "" : " (default for fwm)",
            md.head_count, md.key_length, md.value_length, md.memory_hidden, md.memory_layers,
            md.output_length, (double)FWM_MNM_DEFAULT_META_WEIGHT, gd.slow_hidden, gd.slow_inner,
            sd.sentence_length, sd.memory_size, sd.query_count, sd.relation_length,
            sd.answer_hidden,
            fwm__dist_available() ? "with MPI" : "without MPI, one process only");
}

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

/* The old flag names of fwm-train still work; each use says which name replaces it. */
static void note_deprecated(const char *used, const char *old_name, const char *new_name)
{
    if (strcmp(used, old_name) == 0)
        NOTE("note: %s is deprecated; use %s (the name fwm-init uses too)\n", old_name,
                new_name);
}

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

static int train_main(int argc, char **argv)
{
    const char *data_dir = NULL, *set = "10k", *run_dir = NULL, *out_path = NULL;
    const char *mode_name = "lm", *task_name = "catbabi", *protocol = "catbabi";
    int mode_given = 0;
    fwm__ar_config ar; /* --task ar */
    uint32_t vocab_size = 0; /* --task text: 0 = every training word */
    int vocab_size_given = 0;
    fwm__ar_config_default(&ar);
    int resume = 0, force = 0, run_test = 1, test_lanes = 1;
    fwm__train_options o;
    memset(&o, 0, sizeof o);
    o.adam = fwm__adam_default_params();
    o.steps = 30000;
    o.lanes = 32;
    o.window = 200;
    o.seed = 1;
    o.threads = fwm__cpu_count() / dist.local_size;
    if (o.threads < 1)
        o.threads = 1;
    o.dist = &dist;
    o.eval_every = 1000;
    o.eval.lanes = 100;
    o.eval.window = 200;
    o.checkpoint_every = 500;
    o.progress_seconds = 10;
    fwm_hparams *hp = &o.hp; /* the paper's sizes and constants (FWM_HPARAM_LIST), then the flags */
    fwm__hparams_defaults(hp);
    fwm_lstm_hparams *lh = &o.lstm; /* the same for --arch lstm (FWM_LSTM_HPARAM_LIST) */
    fwm_lstm_hparams_defaults(lh);
    fwm_mnm_hparams *mh = &o.mnm; /* and for --arch mnm (FWM_MNM_HPARAM_LIST) */
    fwm_mnm_hparams_defaults(mh);
    o.meta_weight = FWM_MNM_DEFAULT_META_WEIGHT;
    fwm_gfw_hparams *gh = &o.gfw; /* and for --arch gfw (FWM_GFW_HPARAM_LIST: the paper's sizes) */
    fwm_gfw_hparams_defaults(gh);
    fwm_stm_hparams *sh = &o.stm; /* and for --arch stm (FWM_STM_HPARAM_LIST: the bAbI sizes) */
    fwm_stm_hparams_defaults(sh);
    int train_output_given = 0;
    o.max_nonfinite = 10;
    /* --arch first, wherever it is: the size flags below set that architecture's sizes */
    const char *arch_name = "fwm";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--arch") == 0)
            arch_name = argv[i + 1];
    if (fwm__train_arch_parse(arch_name, &o.arch) != 0) {
        NOTE("error: --arch expects fwm, lstm, mnm, gfw or stm, got '%s'\n", arch_name);
        return 2;
    }
    int lstm = o.arch == FWM_ARCH_LSTM, mnm = o.arch == FWM_ARCH_MNM, gfw = o.arch == FWM_ARCH_GFW;
    int stm = o.arch == FWM_ARCH_STM;
    const char *wrong_flag = NULL; /* a size flag of the other architecture */
    int dropout_given = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && (i++, 1))
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--resume") == 0) {
            resume = 1;
        } else if (strcmp(a, "--force") == 0) {
            force = 1;
        } else if (strcmp(a, "--no-test") == 0) {
            run_test = 0;
        } else if (strcmp(a, "--tie-embeddings") == 0) {
            o.tie_embeddings = 1;
            if (mnm || gfw || stm)
                wrong_flag = a;
        } else if (strcmp(a, "--residual") == 0) {
            hp->residual = 1;
            lh->residual = 1;
            if (mnm || gfw || stm)
                wrong_flag = a;
        } else if (strcmp(a, "--no-residual") == 0) {
            hp->residual = 0;
            lh->residual = 0;
            if (mnm || gfw || stm)
                wrong_flag = a;
        } else if (!v) {
            NOTE("error: unknown option or missing value: %s (see --help)\n", a);
            return 2;
        } else if (OPT("--arch")) {
            /* read above */
        } else if (OPT("--layers")) {
            lh->layer_count = (uint32_t)fwm__parse_long(a, v, 1, FWM_LSTM_MAX_LAYERS);
            if (!lstm && lh->layer_count > FWM_MAX_BLOCKS) {
                NOTE("error: --layers: at most %u for --arch fwm (the stacked FWM)\n",
                     FWM_MAX_BLOCKS);
                return 2;
            }
            hp->block_count = (uint16_t)(lstm ? 1 : lh->layer_count);
            if (mnm || gfw || stm)
                wrong_flag = "--layers";
        } else if (OPT("--heads")) {
            mh->head_count = (uint32_t)fwm__parse_long(a, v, 1, FWM_MNM_MAX_HEADS);
            if (!mnm)
                wrong_flag = a;
        } else if (OPT("--key-length")) {
            mh->key_length = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!mnm)
                wrong_flag = a;
        } else if (OPT("--value-length")) {
            mh->value_length = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!mnm)
                wrong_flag = a;
        } else if (OPT("--memory-hidden")) {
            mh->memory_hidden = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!mnm)
                wrong_flag = a;
        } else if (OPT("--memory-layers")) {
            mh->memory_layers = (uint32_t)fwm__parse_long(a, v, 1, FWM_MNM_MAX_MEMORY_LAYERS);
            if (!mnm)
                wrong_flag = a;
        } else if (OPT("--output-length")) {
            mh->output_length = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!mnm)
                wrong_flag = a;
        } else if (OPT("--meta-weight")) {
            o.meta_weight = fwm__parse_double(a, v, 0, 1e6);
            if (!mnm)
                wrong_flag = a;
        } else if (OPT("--slow-hidden")) {
            gh->slow_hidden = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!gfw)
                wrong_flag = a;
        } else if (OPT("--slow-inner")) {
            gh->slow_inner = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!gfw)
                wrong_flag = a;
        } else if (OPT("--input")) {
            if (strcmp(v, "sentence") == 0)
                sh->input_mode = FWM_STM_INPUT_SENTENCE;
            else if (strcmp(v, "word") == 0)
                sh->input_mode = FWM_STM_INPUT_WORD;
            else {
                NOTE("error: --input expects sentence or word, got '%s'\n", v);
                return 2;
            }
            if (!stm)
                wrong_flag = a;
        } else if (OPT("--sentence-length")) {
            sh->sentence_length = (uint32_t)fwm__parse_long(a, v, 1, FWM_STM_MAX_SENTENCE_LENGTH);
            if (!stm)
                wrong_flag = a;
        } else if (OPT("--memory-size")) {
            sh->memory_size = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!stm)
                wrong_flag = a;
        } else if (OPT("--queries")) {
            sh->query_count = (uint32_t)fwm__parse_long(a, v, 1, FWM_STM_MAX_QUERIES);
            if (!stm)
                wrong_flag = a;
        } else if (OPT("--relation-length")) {
            sh->relation_length = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!stm)
                wrong_flag = a;
        } else if (OPT("--answer-hidden")) {
            sh->answer_hidden = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (!stm)
                wrong_flag = a;
        } else if (OPT("--reset-on-eos") || OPT("--fix-alpha") || OPT("--train-output")) {
            int on = strcmp(v, "on") == 0;
            if (!on && strcmp(v, "off") != 0) {
                NOTE("error: %s expects on or off, got '%s'\n", a, v);
                return 2;
            }
            if (strcmp(a, "--reset-on-eos") == 0)
                sh->reset_on_eos = on;
            else if (strcmp(a, "--fix-alpha") == 0)
                o.stm_fix_alpha = on;
            else
                o.stm_train_output = on, train_output_given = 1;
            if (!stm)
                wrong_flag = a;
        } else if (OPT("--max-nonfinite")) {
            o.max_nonfinite = (int)fwm__parse_long(a, v, 0, 1 << 30);
        } else if (OPT("--embedding-init")) {
            o.embedding_init = fwm__parse_double(a, v, 1e-6, 10);
            if (!lstm && o.arch != FWM_ARCH_FWM)
                wrong_flag = "--embedding-init";
        } else if (OPT("--dropout-token")) {
            o.dropout.token = (float)fwm__parse_double(a, v, 0, 0.99);
            dropout_given = 1;
        } else if (OPT("--dropout-embedding")) {
            o.dropout.embedding = (float)fwm__parse_double(a, v, 0, 0.99);
            dropout_given = 1;
        } else if (OPT("--dropout-recurrent")) {
            o.dropout.recurrent = (float)fwm__parse_double(a, v, 0, 0.99);
            dropout_given = 1;
        } else if (OPT("--dropout-layer")) {
            o.dropout.layer = (float)fwm__parse_double(a, v, 0, 0.99);
            dropout_given = 1;
        } else if (OPT("--vocab-size")) {
            vocab_size = (uint32_t)fwm__parse_long(a, v, 1, 1L << 24);
            vocab_size_given = 1;
        } else if (OPT("--data")) {
            data_dir = v;
        } else if (OPT("--set")) {
            set = v;
        } else if (OPT("--mode")) {
            mode_name = v;
            mode_given = 1;
        } else if (OPT("--task")) {
            task_name = v;
        } else if (OPT("--protocol")) {
            protocol = v;
        } else if (fwm__parse_ar_option(a, v, &ar)) {
            i++;
        } else if (OPT("--steps")) {
            o.steps = fwm__parse_long(a, v, 1, 1L << 40);
        } else if (OPT("--lanes")) {
            o.lanes = (int)fwm__parse_long(a, v, 1, 1 << 16);
        } else if (OPT("--window")) {
            o.window = (int)fwm__parse_long(a, v, 1, 1 << 16);
        } else if (OPT("--lr")) {
            o.adam.lr = fwm__parse_double(a, v, 0, 10);
        } else if (OPT("--beta1")) {
            o.adam.beta1 = fwm__parse_double(a, v, 0, 0.999999);
        } else if (OPT("--beta2")) {
            o.adam.beta2 = fwm__parse_double(a, v, 0, 0.99999999);
        } else if (OPT("--eps")) {
            o.adam.eps = fwm__parse_double(a, v, 0, 1);
        } else if (OPT("--clip")) {
            o.adam.clip_norm = fwm__parse_double(a, v, 0, 1e30);
        } else if (OPT("--warmup")) {
            o.adam.warmup_steps = fwm__parse_long(a, v, 0, 1L << 40);
        } else if (OPT("--decay-from")) {
            o.adam.decay_start = fwm__parse_long(a, v, 0, 1L << 40);
        } else if (OPT("--lr-final")) {
            o.adam.lr_final = fwm__parse_double(a, v, 0, 10);
        } else if (OPT("--seed")) {
            o.seed = (uint64_t)fwm__parse_long(a, v, 0, 1L << 62);
        } else if (OPT("--threads")) {
            o.threads = (int)fwm__parse_long(a, v, 1, 1024);
        } else if (OPT("--lane-groups")) {
            o.lane_groups = (int)fwm__parse_long(a, v, 1, 1 << 16);
        } else if (OPT("--embedding") || OPT("--embed")) {
            note_deprecated(a, "--embed", "--embedding");
            hp->embedding_length = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            lh->embedding_length = mh->embedding_length = hp->embedding_length;
            gh->embedding_length = sh->embedding_length = hp->embedding_length;
        } else if (OPT("--hidden")) {
            /* gfw: m >= 2 (the layer norm of a single number is 0) */
            hp->hidden_size = (uint32_t)fwm__parse_long(a, v, gfw ? 2 : 1, FWM_MAX_DIM);
            lh->hidden_size = mh->hidden_size = hp->hidden_size;
            gh->fast_hidden = hp->hidden_size;
            if (stm)
                wrong_flag = a;
        } else if (OPT("--memory-s") || OPT("--mem-s")) {
            note_deprecated(a, "--mem-s", "--memory-s");
            hp->memory_s = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (lstm || mnm || gfw || stm)
                wrong_flag = a;
        } else if (OPT("--memory-r") || OPT("--mem-r")) {
            note_deprecated(a, "--mem-r", "--memory-r");
            hp->memory_r = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (lstm || mnm || gfw || stm)
                wrong_flag = a;
        } else if (OPT("--memory-t") || OPT("--mem-t")) {
            note_deprecated(a, "--mem-t", "--memory-t");
            hp->memory_t = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_DIM);
            if (lstm || mnm || gfw || stm)
                wrong_flag = a;
        } else if (OPT("--reads")) {
            hp->read_count = (uint32_t)fwm__parse_long(a, v, 1, FWM_MAX_READ_COUNT);
            if (lstm || mnm || gfw || stm)
                wrong_flag = a;
        } else if (OPT("--run-dir")) {
            run_dir = v;
        } else if (OPT("--checkpoint-every")) {
            o.checkpoint_every = fwm__parse_long(a, v, 0, 1L << 40);
        } else if (OPT("--eval-every")) {
            o.eval_every = fwm__parse_long(a, v, 0, 1L << 40);
        } else if (OPT("--eval-lanes")) {
            o.eval.lanes = (int)fwm__parse_long(a, v, 1, 1 << 16);
        } else if (OPT("--eval-windows")) {
            o.eval.max_windows = fwm__parse_long(a, v, 0, 1L << 40);
        } else if (OPT("--test-lanes")) {
            test_lanes = (int)fwm__parse_long(a, v, 1, 1 << 16);
        } else if (OPT("--out")) {
            out_path = v;
        } else if (OPT("--progress")) {
            o.progress_seconds = fwm__parse_double(a, v, 0, 1e9);
        } else {
            NOTE("error: unknown option %s (see --help)\n", a);
            return 2;
        }
#undef OPT
    }
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
        if (fwm_lstm_hparams_check(lh, &err) != FWM_OK) {
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
        if (fwm_mnm_hparams_check(mh, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            fwm__catbabi_release(&data);
            return 2;
        }
    } else if (gfw) {
        spec.gfw = *gh;
        NOTE("vocabulary %u words; gfw E=%u fast m=%u slow N=%u P=%u (fast matrices %llu + %llu "
             "floats per lane); mode %s; B=%d W=%d; %d thread(s)\n",
             gh->vocab_size, gh->embedding_length, gh->fast_hidden, gh->slow_hidden,
             gh->slow_inner, (unsigned long long)(gh->fast_hidden * fwm_gfw_f1_cols(gh)),
             (unsigned long long)(gh->fast_hidden * fwm_gfw_f2_cols(gh)), mode_name, o.lanes,
             o.window, o.threads);
        if (fwm_gfw_hparams_check(gh, &err) != FWM_OK) {
            fprintf(stderr, "error: %s\n", err.message);
            fwm__catbabi_release(&data);
            return 2;
        }
    } else if (stm) {
        spec.stm = *sh;
        uint64_t state = fwm_stm_state_floats(sh);
        NOTE("vocabulary %u words; STM %s mode E=%u P=%u d=%u n_q=%u n_r=%u H_a=%u reset_on_eos %s "
             "(memories %llu floats per lane); alpha1, alpha3 %s; Z %s; mode %s; B=%d W=%d; %d "
             "thread(s)\n",
             sh->vocab_size, stm_sentence ? "sentence" : "word", sh->embedding_length,
             sh->sentence_length, sh->memory_size, sh->query_count, sh->relation_length,
             sh->answer_hidden, sh->reset_on_eos ? "on" : "off", (unsigned long long)state,
             o.stm_fix_alpha ? "held" : "trained",
             !stm_sentence ? "-" : o.stm_train_output ? "trained" : "held", mode_name, o.lanes,
             o.window, o.threads);
        if (fwm_stm_hparams_check(sh, &err) != FWM_OK) {
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
    if (task_ar || task_text)
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
