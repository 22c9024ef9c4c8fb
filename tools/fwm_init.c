/* fwm_init.c - fwm-init: write a randomly initialised model file of any sizes, of the FWM (with the
 * released code's initialisation, model_format/fwm/fwm_model_init.h), with --arch lstm of the LSTM
 * baseline (model_format/lstm/lstm_init.h), with --arch mnm of the Metalearned Neural Memory
 * baseline (model_format/mnm/mnm_init.h), with --arch gfw of the Gated Fast Weights model
 * (model_format/gfw/gfw_init.h) or with --arch stm of the STM (model_format/stm/stm_init.h), with a
 * vocabulary read from a file (one token per line), generated, or for gfw by default the
 * associative retrieval task's 15 symbols, and a seed. Exit status 0 on success, 1 when the model
 * cannot be written, 2 for a usage error (the reason on stderr). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_model_init.h"
#include "fwm_model_shape.h"
#include "fwm_schema.h"
#include "gfw/gfw_init.h"
#include "lstm/lstm_init.h"
#include "mnm/mnm_init.h"
#include "stm/stm_init.h"
#include "stm/stm_schema.h"

static void usage(FILE *out) {
    fwm_hparams d; /* the defaults shown are the one definition's (FWM_HPARAM_LIST) */
    fwm__hparams_defaults(&d);
    fwm_lstm_hparams l;
    fwm__lstm_hparams_defaults(&l);
    fwm_mnm_hparams m;
    fwm__mnm_hparams_defaults(&m);
    fwm_gfw_hparams g;
    fwm__gfw_hparams_defaults(&g);
    fwm_stm_hparams st;
    fwm__stm_hparams_defaults(&st);
    fprintf(out,
            "usage: fwm-init --out PATH [--arch fwm|lstm|mnm|gfw|stm] [options]\n"
            "Write a randomly initialised model (GGUF): the FWM with the released FWM code's init,\n"
            "with --arch lstm the LSTM baseline (docs/MODEL.md, \"The LSTM baseline\"), with\n"
            "--arch mnm the Metalearned Neural Memory baseline (docs/MODEL.md, same name), with\n"
            "--arch gfw the Gated Fast Weights model (docs/MODEL.md, same name), or with --arch stm\n"
            "the STM (docs/MODEL.md, \"The STM (self-attentive associative memory)\").\n"
            "\n"
            "  --out PATH            model file to write (required; written atomically)\n"
            "  --arch A              fwm (default), lstm, mnm, gfw or stm\n"
            "  --vocab FILE          vocabulary, one token per line (ids in line order)\n"
            "  --vocab-size N        generated vocabulary: <pad> <eos> . ? w4 w5 ... (default %" PRIu32 ")\n"
            "  --embedding E         token embedding size (default %" PRIu32 ")\n"
            "  --hidden H            LSTM hidden size (default %" PRIu32 ")\n"
            "  --memory-s S          fast-weight key 1 size (default %" PRIu32 ")\n"
            "  --memory-r R          fast-weight key 2 size (default %" PRIu32 ")\n"
            "  --memory-t T          fast-weight value size (default %" PRIu32 ")\n"
            "  --reads N             chained reads per step; N > 1 needs S == T (default %" PRIu32 ")\n"
            "  --residual            y = m + h%s\n"
            "  --no-residual         y = m%s\n"
            "  --read-policy P       always | token (default always)\n"
            "  --read-token WORD     token that triggers reads under 'token' (default \"?\")\n"
            "  --pad-token WORD      padding token (default \"<pad>\", else id 0)\n"
            "  --eos-token WORD      end-of-sample token (default \"<eos>\", else id 1)\n"
            "  --prime \"WORDS\"       the words a new session reads first (fwm.session.prime_tokens;\n"
            "                        \"\" for none; default: the key is left out and readers prime\n"
            "                        with the end-of-sample token)\n"
            "  --forget-bias X       (default %g)\n"
            "  --beta-bias X         (default %g)\n"
            "  --write-scale X       (default 1/T)\n"
"  --layer-norm-eps X    (default %g)\n"
            "  --layers L            the stacked FWM: L - 1 LSTM layers below the FWM's own,\n"
            "                        1 to 8 (default 1: none; docs/MODEL.md, \"The stacked FWM\")\n"
            "  --seed N              random seed (default 1)\n"
            "  --name NAME           general.name (default none)\n"
            "  --help                this text\n"
            "\n"
            "With --arch lstm: --memory-*, --reads, --read-*, --beta-bias, --write-scale and\n"
            "--layer-norm-eps do not apply, and these do (defaults: the paper's catbAbI LSTM):\n"
            "  --layers L            stacked LSTM layers (default %" PRIu32 ")\n"
            "  --embedding E         (default %" PRIu32 ")   --hidden H (default %" PRIu32 ")\n"
            "  --residual, --no-residual  layers 2.. add their input to their output (default %s)\n"
            "  --forget-bias X       (default %g)\n"
            "\n"
            "With --arch mnm: the same FWM-only flags and --residual do not apply, and these do\n"
            "(defaults: the FWM paper's catbAbI MNM-p):\n"
            "  --embedding E         (default %" PRIu32 ")   --hidden H controller (default %" PRIu32 ")\n"
            "  --heads N             read and write heads (default %" PRIu32 ")\n"
            "  --key-length K        keys and the rate vector (default %" PRIu32 ")\n"
            "  --value-length V      values and the read-out (default %" PRIu32 ")\n"
            "  --memory-hidden D     the memory net's hidden layers (default %" PRIu32 ")\n"
            "  --memory-layers L     the memory net's weight matrices (default %" PRIu32 ")\n"
            "  --output-length O     the controller's output y (default %" PRIu32 ")\n"
            "  --forget-bias X       (default %g)\n"
            "\n"
            "With --arch gfw: the FWM-only flags but --layer-norm-eps, --residual and --forget-bias\n"
            "do not apply, and these do (defaults: the paper's associative retrieval model; without\n"
            "--vocab or --vocab-size the task's 15 symbols, padding \" \", end of sequence \".\"):\n"
            "  --embedding E         (default %" PRIu32 ")   --hidden m fast net (default %" PRIu32 ")\n"
            "  --slow-hidden N       the slow net's state (default %" PRIu32 ")\n"
            "  --slow-inner P        the slow net's transition layer (default %" PRIu32 ")\n"
            "  --layer-norm-eps X    (default %g)\n"
            "\n"
            "With --arch stm: of the flags above only --vocab*, --embedding, --pad-token, --eos-token,\n"
            "--prime, --seed and --name apply, and these do (defaults: the paper's bAbI sizes):\n"
            "  --input MODE          sentence (default: a step per sentence, answers at \"?\") or word\n"
            "  --embedding E         (default %" PRIu32 ")\n"
            "  --sentence-length P   words of a sentence encoded (default %" PRIu32 ")\n"
            "  --memory-size d       item memory d x d, relational n_q x d x d (default %" PRIu32 ")\n"
            "  --queries N           n_q (default %" PRIu32 ")\n"
            "  --relation-length N   n_r, the word-mode output per query (default %" PRIu32 ")\n"
            "  --answer-hidden N     the answer module's MLPs (default %" PRIu32 ")\n"
            "  --reset-on-eos on|off <eos> restores the reset state (default on)\n"
            "  --statement-end WORD  (default \".\")   --question-end WORD (default \"?\")\n",
            d.vocab_size, d.embedding_length, d.hidden_size, d.memory_s, d.memory_r, d.memory_t,
            d.read_count, d.residual ? " (default)" : "", d.residual ? "" : " (default)",
            (double)d.forget_bias, (double)d.beta_bias, (double)d.layer_norm_eps, l.layer_count,
            l.embedding_length, l.hidden_size, l.residual ? "on" : "off", (double)l.forget_bias,
            m.embedding_length, m.hidden_size, m.head_count, m.key_length, m.value_length,
            m.memory_hidden, m.memory_layers, m.output_length, (double)m.forget_bias,
            g.embedding_length, g.fast_hidden, g.slow_hidden, g.slow_inner,
            (double)g.layer_norm_epsilon, st.embedding_length, st.sentence_length, st.memory_size,
            st.query_count, st.relation_length, st.answer_hidden);
}

static int parse_u64(const char *flag, const char *text, uint64_t low, uint64_t high,
                     uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (text[0] == '\0' || text[0] == '-' || *end != '\0' || errno == ERANGE || v < low ||
        v > high) {
        fprintf(stderr, "fwm-init: %s: expected an integer from %" PRIu64 " to %" PRIu64
                        ", found '%s'\n",
                flag, low, high, text);
        return 0;
    }
    *out = v;
    return 1;
}

static int parse_u32(const char *flag, const char *text, uint32_t low, uint32_t high,
                     uint32_t *out) {
    uint64_t v;
    if (!parse_u64(flag, text, low, high, &v)) return 0;
    *out = (uint32_t)v;
    return 1;
}

static int parse_float(const char *flag, const char *text, float *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (text[0] == '\0' || *end != '\0' || errno == ERANGE || !isfinite((float)v)) {
        fprintf(stderr, "fwm-init: %s: expected a finite number, found '%s'\n", flag, text);
        return 0;
    }
    *out = (float)v;
    return 1;
}

typedef struct vocabulary {
    char **tokens;
    uint32_t count;
    char *text; /* file contents the tokens point into, or NULL */
} vocabulary;

static void vocabulary_free(vocabulary *v) {
    if (!v->text && v->tokens)
        for (uint32_t i = 0; i < v->count; i++) free(v->tokens[i]);
    free(v->tokens);
    free(v->text);
    memset(v, 0, sizeof *v);
}

static int generate_vocabulary(uint32_t size, vocabulary *v) {
    static const char *const first[] = {"<pad>", "<eos>", ".", "?"};
    v->tokens = calloc(size, sizeof *v->tokens);
    if (!v->tokens) return 0;
    v->count = size;
    for (uint32_t i = 0; i < size; i++) {
        char buf[24];
        if (i < 4)
            snprintf(buf, sizeof buf, "%s", first[i]);
        else
            snprintf(buf, sizeof buf, "w%" PRIu32, i);
        v->tokens[i] = strdup(buf);
        if (!v->tokens[i]) return 0;
    }
    return 1;
}

/* The associative retrieval task's 15 symbols (docs/AR_TASK.md), in their fixed id order. */
static int ar_vocabulary(vocabulary *v) {
    static const char *const symbols[15] = {" ", "a", "b", "c", "d", "e", "f", "g",
                                            "h", "S", "Q", "(", ")", ",", "."};
    v->tokens = calloc(15, sizeof *v->tokens);
    if (!v->tokens) return 0;
    v->count = 15;
    for (uint32_t i = 0; i < 15; i++)
        if (!(v->tokens[i] = strdup(symbols[i]))) return 0;
    return 1;
}

/* One token per line; a final newline is optional; "\r\n" line ends are accepted. */
static int read_vocabulary(const char *path, vocabulary *v) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fwm-init: --vocab: cannot open '%s': %s\n", path, strerror(errno));
        return 0;
    }
    size_t capacity = 4096, used = 0;
    char *text = malloc(capacity);
    size_t n;
    while (text && (n = fread(text + used, 1, capacity - used - 1, f)) > 0) {
        used += n;
        if (capacity - used - 1 == 0) {
            char *grown = realloc(text, capacity * 2);
            if (!grown) {
                free(text);
                text = NULL;
            }
            text = grown;
            capacity *= 2;
        }
    }
    int failed = ferror(f);
    fclose(f);
    if (!text || failed) {
        fprintf(stderr, "fwm-init: --vocab: cannot read '%s'\n", path);
        free(text);
        return 0;
    }
    text[used] = '\0';
    if (memchr(text, '\0', used)) {
        fprintf(stderr, "fwm-init: --vocab: '%s' contains a NUL byte\n", path);
        free(text);
        return 0;
    }
    uint64_t lines = 0;
    for (size_t i = 0; i < used; i++) lines += text[i] == '\n';
    if (used > 0 && text[used - 1] != '\n') lines++;
    if (lines > FWM_MAX_VOCAB_SIZE) {
        fprintf(stderr, "fwm-init: --vocab: '%s' has %" PRIu64 " lines, more than %u tokens\n",
                path, lines, FWM_MAX_VOCAB_SIZE);
        free(text);
        return 0;
    }
    v->text = text;
    v->tokens = calloc(lines ? lines : 1, sizeof *v->tokens);
    if (!v->tokens) return 0;
    char *p = text;
    for (uint64_t i = 0; i < lines; i++) {
        char *end = strchr(p, '\n');
        char *next = end ? end + 1 : p + strlen(p);
        if (!end) end = p + strlen(p);
        if (end > p && end[-1] == '\r') end--;
        *end = '\0';
        if (end == p) {
            fprintf(stderr, "fwm-init: --vocab: '%s' line %" PRIu64 ": empty token\n", path, i + 1);
            return 0;
        }
        v->tokens[v->count++] = p;
        p = next;
    }
    return 1;
}

/* Id of `word` in the vocabulary, or -1. */
static int64_t find_token(const vocabulary *v, const char *word) {
    for (uint32_t i = 0; i < v->count; i++)
        if (strcmp(v->tokens[i], word) == 0) return i;
    return -1;
}

/* --prime: the space-separated words' ids into ids[], at most FWM_MAX_PRIME_TOKENS. */
static int resolve_prime(const vocabulary *v, const char *text, uint32_t *ids, size_t *count) {
    *count = 0;
    char word[256];
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        if (n == 0) break;
        if (n >= sizeof word) {
            fprintf(stderr, "fwm-init: --prime: a word of %zu bytes is longer than any token\n", n);
            return 0;
        }
        memcpy(word, p, n);
        word[n] = '\0';
        p += n;
        int64_t id = find_token(v, word);
        if (id < 0) {
            fprintf(stderr, "fwm-init: --prime: '%s' is not in the vocabulary\n", word);
            return 0;
        }
        if (*count == FWM_MAX_PRIME_TOKENS) {
            fprintf(stderr, "fwm-init: --prime: more than %u words\n", FWM_MAX_PRIME_TOKENS);
            return 0;
        }
        ids[(*count)++] = (uint32_t)id;
    }
    return 1;
}

/* Resolve a token flag: explicit words must exist; defaults fall back to `fallback`. */
static int resolve_token(const vocabulary *v, const char *flag, const char *word, int explicit,
                         uint32_t fallback, uint32_t *id) {
    int64_t found = find_token(v, word);
    if (found >= 0) {
        *id = (uint32_t)found;
        return 1;
    }
    if (explicit) {
        fprintf(stderr, "fwm-init: %s: '%s' is not in the vocabulary\n", flag, word);
        return 0;
    }
    *id = fallback;
    return 1;
}

/* The provenance keys of a freshly initialised model. */
#define INIT_EXTRA_KEYS(seed)                                                                     \
    {                                                                                             \
        {.key = "fwm.training.mode", .kind = FWM_WRITE_KV_STRING, .value.string = "init"},        \
            {.key = "fwm.training.steps", .kind = FWM_WRITE_KV_U64, .value.u64 = 0},             \
            {.key = "fwm.training.seed", .kind = FWM_WRITE_KV_U64, .value.u64 = (seed)},         \
    }

/* What the files written for the four architectures beside the FWM share. */
typedef struct init_file {
    const char *name;
    const char *const *tokens;
    bool has_prime;
    const uint32_t *prime_ids;
    size_t prime_count;
    const fwm_write_kv *extra;
    size_t extra_count;
} init_file;

/* One architecture beside the FWM as write_arch sees it: its own functions behind a `const void *`
 * to its hyperparameters (INIT_ARCH below defines them), and its one-line summary. */
typedef struct init_arch {
    fwm_status (*check)(const void *hp, fwm_error *err);
    size_t (*tensor_count)(const void *hp);
    void (*tensor_at)(const void *hp, size_t i, char name[48], uint64_t *rows, uint64_t *cols);
    void (*init_weights)(const void *hp, uint64_t seed, float *const *tensors);
    fwm_status (*write)(const char *out, const void *hp, const init_file *file, float *const *tensors,
                        fwm_error *err);
    void (*summary)(const char *out, const void *hp, uint64_t parameters, uint64_t seed);
} init_arch;

#define INIT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define INIT_MAX_TENSORS                                                                          \
    INIT_MAX(INIT_MAX(FWM_LSTM_MAX_TENSORS, FWM_MNM_MAX_TENSORS),                                 \
             INIT_MAX(FWM_GFW_MAX_TENSORS, FWM_STM_MAX_TENSORS))

/* The functions of init_arch for fwm_<arch>_... (arch: lstm, mnm, gfw or stm). */
#define INIT_ARCH(arch)                                                                           \
    static fwm_status arch##_check(const void *hp, fwm_error *err) {                              \
        return fwm__##arch##_hparams_valid(hp, err);                                               \
    }                                                                                             \
    static size_t arch##_tensor_count(const void *hp) { return fwm__##arch##_tensor_count(hp); }   \
    static void arch##_tensor_at(const void *hp, size_t i, char name[48], uint64_t *rows,         \
                                 uint64_t *cols) {                                                \
        fwm__##arch##_tensor_at(hp, i, name, rows, cols);                                          \
    }                                                                                             \
    static void arch##_init_weights(const void *hp, uint64_t seed, float *const *tensors) {       \
        fwm__##arch##_init_weights(hp, seed, tensors);                                            \
    }                                                                                             \
    static fwm_status arch##_write(const char *out, const void *hp, const init_file *file,        \
                                   float *const *tensors, fwm_error *err) {                       \
        fwm_##arch##_write_spec spec = {.hp = *(const fwm_##arch##_hparams *)hp,                   \
                                        .head.name = file->name,                                    \
                                        .head.tokens = file->tokens,                                \
                                        .head.extra = file->extra,                                  \
                                        .head.extra_count = file->extra_count,                      \
                                        .head.has_prime_tokens = file->has_prime,                   \
                                        .head.prime_tokens = file->prime_ids,                       \
                                        .head.prime_count = file->prime_count};                     \
        for (size_t i = 0; i < fwm__##arch##_tensor_count(hp); i++) spec.tensors[i] = tensors[i];  \
        return fwm__##arch##_model_write(out, &spec, err);                                         \
    }

INIT_ARCH(lstm)
INIT_ARCH(mnm)
INIT_ARCH(gfw)
INIT_ARCH(stm)

static void lstm_summary(const char *out, const void *arch_hp, uint64_t parameters, uint64_t seed) {
    const fwm_lstm_hparams *hp = arch_hp;
    printf("wrote %s: lstm V=%" PRIu32 " E=%" PRIu32 " H=%" PRIu32 " L=%" PRIu32
           " residual=%s, %" PRIu64 " parameters, seed %" PRIu64 "\n",
           out, hp->vocab_size, hp->embedding_length, hp->hidden_size, hp->layer_count,
           hp->residual ? "on" : "off", parameters, seed);
}

static void mnm_summary(const char *out, const void *arch_hp, uint64_t parameters, uint64_t seed) {
    const fwm_mnm_hparams *hp = arch_hp;
    printf("wrote %s: mnm V=%" PRIu32 " E=%" PRIu32 " H=%" PRIu32 " heads=%" PRIu32 " d_k=%" PRIu32
           " d_v=%" PRIu32 " D=%" PRIu32 " L_m=%" PRIu32 " d_o=%" PRIu32 ", %" PRIu64
           " floats (%" PRIu64 " in the fixed initial memory), seed %" PRIu64 "\n",
           out, hp->vocab_size, hp->embedding_length, hp->hidden_size, hp->head_count,
           hp->key_length, hp->value_length, hp->memory_hidden, hp->memory_layers, hp->output_length,
           parameters, fwm__mnm_memory_elements(hp), seed);
}

static void gfw_summary(const char *out, const void *arch_hp, uint64_t parameters, uint64_t seed) {
    const fwm_gfw_hparams *hp = arch_hp;
    printf("wrote %s: gfw V=%" PRIu32 " E=%" PRIu32 " m=%" PRIu32 " N=%" PRIu32 " P=%" PRIu32
           ", %" PRIu64 " parameters, %" PRIu64 " state floats, seed %" PRIu64 "\n",
           out, hp->vocab_size, hp->embedding_length, hp->fast_hidden, hp->slow_hidden,
           hp->slow_inner, parameters, fwm__gfw_hparams_state_floats(hp), seed);
}

static void stm_summary(const char *out, const void *arch_hp, uint64_t parameters, uint64_t seed) {
    const fwm_stm_hparams *hp = arch_hp;
    printf("wrote %s: stm %s mode V=%" PRIu32 " E=%" PRIu32 " P=%" PRIu32 " d=%" PRIu32 " n_q=%" PRIu32
           " n_r=%" PRIu32 " H_a=%" PRIu32 " reset_on_eos=%s, %" PRIu64 " parameters, seed %" PRIu64 "\n",
           out, hp->input_mode == FWM_STM_INPUT_SENTENCE ? "sentence" : "word", hp->vocab_size,
           hp->embedding_length, hp->sentence_length, hp->memory_size, hp->query_count,
           hp->relation_length, hp->answer_hidden, hp->reset_on_eos ? "on" : "off", parameters, seed);
}

static const init_arch lstm_arch = {lstm_check,        lstm_tensor_count, lstm_tensor_at,
                                    lstm_init_weights, lstm_write,        lstm_summary};
static const init_arch mnm_arch = {mnm_check,        mnm_tensor_count, mnm_tensor_at,
                                   mnm_init_weights, mnm_write,        mnm_summary};
static const init_arch gfw_arch = {gfw_check,        gfw_tensor_count, gfw_tensor_at,
                                   gfw_init_weights, gfw_write,        gfw_summary};
static const init_arch stm_arch = {stm_check,        stm_tensor_count, stm_tensor_at,
                                   stm_init_weights, stm_write,        stm_summary};

/* --arch lstm, mnm, gfw or stm: check, initialise and write; returns the exit status. */
static int write_arch(const init_arch *arch, const char *out, const void *hp, const vocabulary *vocab,
                      const char *name, uint64_t seed, bool has_prime, const uint32_t *prime_ids,
                      size_t prime_count) {
    fwm_error err;
    if (arch->check(hp, &err) ||
        fwm__vocab_check((const char *const *)vocab->tokens, NULL, vocab->count,
                         FWM_ERR_INVALID_ARGUMENT, &err)) {
        fprintf(stderr, "fwm-init: %s\n", err.message);
        return 2;
    }
    size_t n = arch->tensor_count(hp);
    uint64_t parameters = 0, counts[INIT_MAX_TENSORS];
    for (size_t i = 0; i < n; i++) {
        char tensor[48];
        uint64_t rows, cols;
        arch->tensor_at(hp, i, tensor, &rows, &cols);
        counts[i] = rows * cols;
        parameters += counts[i];
    }
    float *weights = NULL;
    if (parameters > SIZE_MAX / sizeof(float) || !(weights = malloc(parameters * sizeof(float)))) {
        fprintf(stderr, "fwm-init: out of memory for %" PRIu64 " parameters\n", parameters);
        return 1;
    }
    float *tensors[INIT_MAX_TENSORS];
    float *next = weights;
    for (size_t i = 0; i < n; i++) tensors[i] = next, next += counts[i];
    arch->init_weights(hp, seed, tensors);
    fwm_write_kv extra[3] = INIT_EXTRA_KEYS(seed);
    init_file file = {.name = name,
                      .tokens = (const char *const *)vocab->tokens,
                      .has_prime = has_prime,
                      .prime_ids = prime_ids,
                      .prime_count = prime_count,
                      .extra = extra,
                      .extra_count = 3};
    fwm_status st = arch->write(out, hp, &file, tensors, &err);
    free(weights);
    if (st) {
        fprintf(stderr, "fwm-init: cannot write '%s' (%s): %s\n", out, fwm_status_str(st), err.message);
        return 1;
    }
    arch->summary(out, hp, parameters, seed);
    return 0;
}

int main(int argc, char **argv) {
    fwm_hparams hp; /* the paper's sizes and constants (FWM_HPARAM_LIST), then the flags */
    fwm__hparams_defaults(&hp);
    const uint32_t default_vocab_size = hp.vocab_size;
    const char *out = NULL, *vocab_path = NULL, *name = NULL, *prime = NULL;
    const char *read_token = "?", *pad_token = "<pad>", *eos_token = "<eos>";
    int read_token_given = 0, pad_given = 0, eos_given = 0, write_scale_given = 0;
    uint32_t vocab_size = 0;
    uint64_t seed = 1;
    int lstm = 0;                  /* --arch lstm */
    fwm_lstm_hparams lhp;          /* its sizes: the defaults, then the flags that apply */
    fwm__lstm_hparams_defaults(&lhp);
    const char *fwm_only = NULL;   /* the first flag given that only the FWM has */
    int layers_given = 0;          /* --layers, which only the LSTM has */
    int mnm = 0;                   /* --arch mnm */
    fwm_mnm_hparams mhp;           /* its sizes: the defaults, then the flags that apply */
    fwm__mnm_hparams_defaults(&mhp);
    const char *mnm_only = NULL;   /* the first flag given that only the MNM has */
    int residual_given = 0;        /* --residual or --no-residual, which the MNM lacks */
    int gfw = 0;                   /* --arch gfw */
    fwm_gfw_hparams ghp;           /* its sizes: the defaults, then the flags that apply */
    fwm__gfw_hparams_defaults(&ghp);
    const char *gfw_only = NULL;   /* the first flag given that only the GFW has */
    int eps_given = 0, forget_bias_given = 0;
    int stm = 0;                   /* --arch stm */
    fwm_stm_hparams shp;           /* its sizes: the defaults, then the flags that apply */
    fwm__stm_hparams_defaults(&shp);
    const char *stm_only = NULL;   /* the first flag given that only the STM has */
    const char *statement_end = ".", *question_end = "?";
    int statement_end_given = 0, question_end_given = 0;

    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(flag, "--residual") == 0) {
            hp.residual = lhp.residual = true, residual_given = 1;
            continue;
        }
        if (strcmp(flag, "--no-residual") == 0) {
            hp.residual = lhp.residual = false, residual_given = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fwm-init: %s: %s\n", flag,
                    strncmp(flag, "--", 2) == 0 ? "missing value (or unknown flag)" : "unexpected argument");
            return 2;
        }
        const char *value = argv[++i];
        int ok = 1;
        static const char *const fwm_flags[] = {"--memory-s", "--memory-r", "--memory-t", "--reads",
                                                "--read-policy", "--read-token", "--beta-bias",
                                                "--write-scale"};
        for (size_t k = 0; k < sizeof fwm_flags / sizeof fwm_flags[0] && !fwm_only; k++)
            if (strcmp(flag, fwm_flags[k]) == 0) fwm_only = fwm_flags[k];
        static const char *const mnm_flags[] = {"--heads", "--key-length", "--value-length",
                                                "--memory-hidden", "--memory-layers",
                                                "--output-length"};
        for (size_t k = 0; k < sizeof mnm_flags / sizeof mnm_flags[0] && !mnm_only; k++)
            if (strcmp(flag, mnm_flags[k]) == 0) mnm_only = mnm_flags[k];
        if (!gfw_only && (strcmp(flag, "--slow-hidden") == 0 || strcmp(flag, "--slow-inner") == 0))
            gfw_only = flag;
        static const char *const stm_flags[] = {"--input", "--sentence-length", "--memory-size",
                                                "--queries", "--relation-length", "--answer-hidden",
                                                "--reset-on-eos", "--statement-end", "--question-end"};
        for (size_t k = 0; k < sizeof stm_flags / sizeof stm_flags[0] && !stm_only; k++)
            if (strcmp(flag, stm_flags[k]) == 0) stm_only = stm_flags[k];
        if (strcmp(flag, "--out") == 0)
            out = value;
        else if (strcmp(flag, "--arch") == 0) {
            lstm = strcmp(value, "lstm") == 0, mnm = strcmp(value, "mnm") == 0;
            gfw = strcmp(value, "gfw") == 0, stm = strcmp(value, "stm") == 0;
            if (!lstm && !mnm && !gfw && !stm && strcmp(value, "fwm") != 0) {
                fprintf(stderr,
                        "fwm-init: --arch: expected 'fwm', 'lstm', 'mnm', 'gfw' or 'stm', found '%s'\n",
                        value);
                ok = 0;
            }
        } else if (strcmp(flag, "--layers") == 0) {
            ok = parse_u32(flag, value, 1, FWM_LSTM_MAX_LAYERS, &lhp.layer_count), layers_given = 1;
            if (ok)
                hp.block_count =
                    (uint16_t)(lhp.layer_count <= FWM_MAX_BLOCKS ? lhp.layer_count : 0);
        }
        else if (strcmp(flag, "--heads") == 0)
            ok = parse_u32(flag, value, 1, FWM_MNM_MAX_HEADS, &mhp.head_count);
        else if (strcmp(flag, "--key-length") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &mhp.key_length);
        else if (strcmp(flag, "--value-length") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &mhp.value_length);
        else if (strcmp(flag, "--memory-hidden") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &mhp.memory_hidden);
        else if (strcmp(flag, "--memory-layers") == 0)
            ok = parse_u32(flag, value, 1, FWM_MNM_MAX_MEMORY_LAYERS, &mhp.memory_layers);
        else if (strcmp(flag, "--output-length") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &mhp.output_length);
        else if (strcmp(flag, "--slow-hidden") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &ghp.slow_hidden);
        else if (strcmp(flag, "--slow-inner") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &ghp.slow_inner);
        else if (strcmp(flag, "--input") == 0) {
            if (strcmp(value, "sentence") == 0)
                shp.input_mode = FWM_STM_INPUT_SENTENCE;
            else if (strcmp(value, "word") == 0)
                shp.input_mode = FWM_STM_INPUT_WORD;
            else {
                fprintf(stderr, "fwm-init: --input: expected 'sentence' or 'word', found '%s'\n", value);
                ok = 0;
            }
        } else if (strcmp(flag, "--reset-on-eos") == 0) {
            if (strcmp(value, "on") == 0 || strcmp(value, "off") == 0)
                shp.reset_on_eos = strcmp(value, "on") == 0;
            else {
                fprintf(stderr, "fwm-init: --reset-on-eos: expected 'on' or 'off', found '%s'\n", value);
                ok = 0;
            }
        } else if (strcmp(flag, "--sentence-length") == 0)
            ok = parse_u32(flag, value, 1, FWM_STM_MAX_SENTENCE_LENGTH, &shp.sentence_length);
        else if (strcmp(flag, "--memory-size") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &shp.memory_size);
        else if (strcmp(flag, "--queries") == 0)
            ok = parse_u32(flag, value, 1, FWM_STM_MAX_QUERIES, &shp.query_count);
        else if (strcmp(flag, "--relation-length") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &shp.relation_length);
        else if (strcmp(flag, "--answer-hidden") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &shp.answer_hidden);
        else if (strcmp(flag, "--statement-end") == 0)
            statement_end = value, statement_end_given = 1;
        else if (strcmp(flag, "--question-end") == 0)
            question_end = value, question_end_given = 1;
        else if (strcmp(flag, "--vocab") == 0)
            vocab_path = value;
        else if (strcmp(flag, "--vocab-size") == 0)
            ok = parse_u32(flag, value, 2, FWM_MAX_VOCAB_SIZE, &vocab_size);
        else if (strcmp(flag, "--embedding") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &hp.embedding_length),
            lhp.embedding_length = mhp.embedding_length = ghp.embedding_length = hp.embedding_length,
            shp.embedding_length = hp.embedding_length;
        else if (strcmp(flag, "--hidden") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &hp.hidden_size),
            lhp.hidden_size = mhp.hidden_size = ghp.fast_hidden = hp.hidden_size;
        else if (strcmp(flag, "--memory-s") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &hp.memory_s);
        else if (strcmp(flag, "--memory-r") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &hp.memory_r);
        else if (strcmp(flag, "--memory-t") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_DIM, &hp.memory_t);
        else if (strcmp(flag, "--reads") == 0)
            ok = parse_u32(flag, value, 1, FWM_MAX_READ_COUNT, &hp.read_count);
        else if (strcmp(flag, "--read-policy") == 0) {
            if (strcmp(value, "always") == 0)
                hp.read_policy = FWM_READ_ALWAYS;
            else if (strcmp(value, "token") == 0)
                hp.read_policy = FWM_READ_ON_TOKEN;
            else {
                fprintf(stderr, "fwm-init: --read-policy: expected 'always' or 'token', found '%s'\n",
                        value);
                ok = 0;
            }
        } else if (strcmp(flag, "--read-token") == 0)
            read_token = value, read_token_given = 1;
        else if (strcmp(flag, "--pad-token") == 0)
            pad_token = value, pad_given = 1;
        else if (strcmp(flag, "--eos-token") == 0)
            eos_token = value, eos_given = 1;
        else if (strcmp(flag, "--forget-bias") == 0)
            ok = parse_float(flag, value, &hp.forget_bias),
            lhp.forget_bias = mhp.forget_bias = hp.forget_bias, forget_bias_given = 1;
        else if (strcmp(flag, "--beta-bias") == 0)
            ok = parse_float(flag, value, &hp.beta_bias);
        else if (strcmp(flag, "--write-scale") == 0)
            ok = parse_float(flag, value, &hp.write_scale), write_scale_given = 1;
        else if (strcmp(flag, "--layer-norm-eps") == 0)
            ok = parse_float(flag, value, &hp.layer_norm_eps),
            ghp.layer_norm_epsilon = hp.layer_norm_eps, eps_given = 1;
        else if (strcmp(flag, "--seed") == 0)
            ok = parse_u64(flag, value, 0, UINT64_MAX, &seed);
        else if (strcmp(flag, "--name") == 0)
            name = value;
        else if (strcmp(flag, "--prime") == 0)
            prime = value;
        else {
            fprintf(stderr, "fwm-init: unknown flag '%s' (see --help)\n", flag);
            ok = 0;
        }
        if (!ok) return 2;
    }
    if (!out) {
        fprintf(stderr, "fwm-init: --out PATH is required (see --help)\n");
        return 2;
    }
    if (stm) { /* the STM shares only the vocabulary, token, embedding, prime, seed and name flags */
        const char *other = fwm_only   ? fwm_only
                            : mnm_only ? mnm_only
                            : gfw_only ? gfw_only
                                       : NULL;
        if (!other && eps_given) other = "--layer-norm-eps";
        if (!other && layers_given) other = "--layers";
        for (int i = 1; i < argc && !other; i++)
            if (!strcmp(argv[i], "--hidden") || !strcmp(argv[i], "--forget-bias") ||
                !strcmp(argv[i], "--residual") || !strcmp(argv[i], "--no-residual"))
                other = argv[i];
        if (other) {
            fprintf(stderr, "fwm-init: %s does not apply to --arch stm\n", other);
            return 2;
        }
    } else if (stm_only) {
        fprintf(stderr, "fwm-init: %s applies to --arch stm only\n", stm_only);
        return 2;
    }
    if ((lstm || mnm || gfw) && fwm_only) {
        fprintf(stderr, "fwm-init: %s applies to --arch fwm only\n", fwm_only);
        return 2;
    }
    if ((lstm || mnm) && eps_given) {
        fprintf(stderr, "fwm-init: --layer-norm-eps applies to --arch fwm and gfw only\n");
        return 2;
    }
    if (!gfw && gfw_only) {
        fprintf(stderr, "fwm-init: %s applies to --arch gfw only\n", gfw_only);
        return 2;
    }
    if (gfw && (residual_given || forget_bias_given)) {
        fprintf(stderr, "fwm-init: %s does not apply to --arch gfw\n",
                residual_given ? "--residual or --no-residual" : "--forget-bias");
        return 2;
    }
    if (!mnm && mnm_only) {
        fprintf(stderr, "fwm-init: %s applies to --arch mnm only\n", mnm_only);
        return 2;
    }
    if (mnm && residual_given) {
        fprintf(stderr, "fwm-init: --residual and --no-residual do not apply to --arch mnm\n");
        return 2;
    }
    if ((mnm || gfw || stm) && layers_given) {
        fprintf(stderr, "fwm-init: --layers applies to --arch fwm and lstm only\n");
        return 2;
    }
    if (!lstm && layers_given && hp.block_count == 0) {
        fprintf(stderr, "fwm-init: --layers: expected 1 to %u for --arch fwm, found %" PRIu32 "\n",
                FWM_MAX_BLOCKS, lhp.layer_count);
        return 2;
    }
    if (vocab_path && vocab_size) {
        fprintf(stderr, "fwm-init: give either --vocab or --vocab-size, not both\n");
        return 2;
    }
    if (!write_scale_given) hp.write_scale = 1.0f / (float)hp.memory_t;

    int status = 2;
    float *weights = NULL;
    vocabulary vocab = {0};
    int ar_symbols = gfw && !vocab_path && !vocab_size; /* the AR task's vocabulary */
    if (vocab_path ? !read_vocabulary(vocab_path, &vocab)
        : ar_symbols ? !ar_vocabulary(&vocab)
                     : !generate_vocabulary(vocab_size ? vocab_size : default_vocab_size, &vocab)) {
        if (!vocab_path) fprintf(stderr, "fwm-init: out of memory for the vocabulary\n");
        goto done;
    }
    if (ar_symbols) {
        if (!pad_given) pad_token = " ";
        if (!eos_given) eos_token = ".";
    }
    hp.vocab_size = vocab.count;
    if (!resolve_token(&vocab, "--pad-token", pad_token, pad_given, 0, &hp.padding_token_id) ||
        !resolve_token(&vocab, "--eos-token", eos_token, eos_given, vocab.count > 1 ? 1 : 0,
                       &hp.eos_token_id) ||
        !resolve_token(&vocab, "--read-token", read_token,
                       read_token_given || hp.read_policy == FWM_READ_ON_TOKEN, 0,
                       &hp.read_token_id))
        goto done;
    uint32_t prime_ids[FWM_MAX_PRIME_TOKENS];
    size_t prime_count = 0;
    if (prime && !resolve_prime(&vocab, prime, prime_ids, &prime_count)) goto done;
    fwm_error err;
    /* another architecture: the vocabulary's size and special ids as resolved into hp */
#define TAKE_TOKENS(x)                                                                            \
    ((x).vocab_size = hp.vocab_size, (x).padding_token_id = hp.padding_token_id,                  \
     (x).eos_token_id = hp.eos_token_id)
    const init_arch *arch = NULL;
    const void *arch_hp = NULL;
    if (lstm) {
        TAKE_TOKENS(lhp), arch = &lstm_arch, arch_hp = &lhp;
    } else if (gfw) {
        TAKE_TOKENS(ghp), arch = &gfw_arch, arch_hp = &ghp;
    } else if (stm) {
        TAKE_TOKENS(shp), arch = &stm_arch, arch_hp = &shp;
        /* sentence mode needs both end words in the vocabulary; word mode only keeps their ids */
        int need = shp.input_mode == FWM_STM_INPUT_SENTENCE;
        if (!resolve_token(&vocab, "--statement-end", statement_end, need || statement_end_given, 0,
                           &shp.statement_end_token_id) ||
            !resolve_token(&vocab, "--question-end", question_end, need || question_end_given, 0,
                           &shp.question_end_token_id))
            goto done;
    } else if (mnm) {
        TAKE_TOKENS(mhp), arch = &mnm_arch, arch_hp = &mhp;
    }
#undef TAKE_TOKENS
    if (arch) {
        status = write_arch(arch, out, arch_hp, &vocab, name, seed, prime != NULL, prime_ids, prime_count);
        goto done;
    }
    if (fwm__hparams_check(&hp, FWM_ERR_INVALID_ARGUMENT, &err) ||
        fwm__vocab_check((const char *const *)vocab.tokens, NULL, vocab.count,
                         FWM_ERR_INVALID_ARGUMENT, &err)) {
        fprintf(stderr, "fwm-init: %s\n", err.message);
        goto done;
    }

    status = 1;
    const int n_tensors = fwm__tensor_count(&hp);
    uint64_t offsets[FWM_MAX_TENSORS + 1];
    fwm__tensor_offsets(&hp, offsets);
    uint64_t parameters = offsets[n_tensors];
    if (parameters > SIZE_MAX / sizeof(float) || !(weights = malloc(parameters * sizeof(float)))) {
        fprintf(stderr, "fwm-init: out of memory for %" PRIu64 " parameters\n", parameters);
        goto done;
    }
    float *tensors[FWM_MAX_TENSORS];
    for (int i = 0; i < n_tensors; i++) tensors[i] = weights + offsets[i];
    fwm__model_init_weights(&hp, seed, tensors);

    fwm_write_kv extra[3] = INIT_EXTRA_KEYS(seed);
    fwm_write_spec spec = {.hp = hp,
                           .head.name = name,
                           .head.tokens = (const char *const *)vocab.tokens,
                           .head.extra = extra,
                           .head.extra_count = 3,
                           .head.has_prime_tokens = prime != NULL,
                           .head.prime_tokens = prime_ids,
                           .head.prime_count = prime_count};
    for (int i = 0; i < n_tensors; i++) spec.tensors[i] = tensors[i];
    fwm_status st = fwm__model_write(out, &spec, &err);
    if (st) {
        fprintf(stderr, "fwm-init: cannot write '%s' (%s): %s\n", out, fwm_status_str(st),
                err.message);
        goto done;
    }
    char layers_text[32] = "";
    if (hp.block_count > 1)
        snprintf(layers_text, sizeof layers_text, " L=%u", (unsigned)hp.block_count);
    printf("wrote %s: V=%" PRIu32 " E=%" PRIu32 " H=%" PRIu32 "%s S=%" PRIu32 " R=%" PRIu32
           " T=%" PRIu32 " N_r=%" PRIu32 ", %" PRIu64 " parameters, seed %" PRIu64 "\n",
           out, hp.vocab_size, hp.embedding_length, hp.hidden_size, layers_text, hp.memory_s,
           hp.memory_r, hp.memory_t, hp.read_count, parameters, seed);
    status = 0;
done:
    free(weights);
    vocabulary_free(&vocab);
    return status;
}
