/* fwm_inspect.c - fwm-inspect MODEL: print a model file's metadata, tensors, architecture,
 * parameter count and per-session state size; verify its checksum and fingerprint. Exits 0 when
 * the file is a valid model of a registered architecture ("fwm", "lstm", "mnm", "gfw", "stm") whose
 * checksum (if present) and fingerprint (if present) match; 1 with the reason on stderr for a bad
 * file or a mismatch; 2 for a usage error. Works on the format layer alone (model_format/), without
 * loading the runtime. `fwm-inspect --vocab MODEL` lists the model's words instead, one per line
 * with its id (what a model without <unk> can read). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch_list.h"
#include "fwm_model_shape.h"
#include "fwm_schema.h"
#include "gfw/gfw_schema.h"
#include "gguf_reader.h"
#include "lstm/lstm_schema.h"
#include "mnm/mnm_schema.h"
#include "read_file.h"
#include "schema_common.h"
#include "stm/stm_schema.h"

#define SHOWN_ELEMENTS 8     /* array elements printed before "... N more" */
#define SHOWN_STRING_BYTES 120

static void usage(FILE *out) {
    fprintf(out,
            "usage: fwm-inspect MODEL\n"
            "       fwm-inspect --vocab MODEL\n"
            "Print a model file's metadata, tensors, architecture, parameter count and per-session\n"
            "state size, and verify its tensor-data checksum and fingerprint; with --vocab, list\n"
            "the words the model knows instead, \"ID<TAB>WORD\" per line.\n"
            "Exit status: 0 valid, 1 bad file or mismatch (reason on stderr), 2 usage error.\n");
}

static void print_string(const char *s, uint64_t length) {
    putchar('"');
    uint64_t shown = length < SHOWN_STRING_BYTES ? length : SHOWN_STRING_BYTES;
    for (uint64_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
    if (shown < length) printf("... (%" PRIu64 " bytes)", length);
}

/* One scalar of `type` at p; returns its size. */
static uint64_t print_scalar(uint32_t type, const uint8_t *p) {
    switch (type) {
    case FWM_GGUF_TYPE_UINT8: printf("%u", p[0]); return 1;
    case FWM_GGUF_TYPE_INT8: printf("%d", (int8_t)p[0]); return 1;
    case FWM_GGUF_TYPE_UINT16: printf("%u", fwm__gguf_read_u16(p)); return 2;
    case FWM_GGUF_TYPE_INT16: printf("%d", (int16_t)fwm__gguf_read_u16(p)); return 2;
    case FWM_GGUF_TYPE_UINT32: printf("%" PRIu32, fwm__gguf_read_u32(p)); return 4;
    case FWM_GGUF_TYPE_INT32: printf("%" PRId32, (int32_t)fwm__gguf_read_u32(p)); return 4;
    case FWM_GGUF_TYPE_FLOAT32: printf("%.9g", (double)fwm__gguf_read_f32(p)); return 4;
    case FWM_GGUF_TYPE_BOOL: printf("%s", p[0] ? "true" : "false"); return 1;
    case FWM_GGUF_TYPE_UINT64: printf("%" PRIu64, fwm__gguf_read_u64(p)); return 8;
    case FWM_GGUF_TYPE_INT64: printf("%" PRId64, (int64_t)fwm__gguf_read_u64(p)); return 8;
    case FWM_GGUF_TYPE_FLOAT64: printf("%.17g", fwm__gguf_read_f64(p)); return 8;
    case FWM_GGUF_TYPE_STRING: {
        fwm_gguf_string s = fwm__gguf_read_string(p);
        print_string(s.data, s.length);
        return 8 + s.length;
    }
    default: printf("?"); return 0;
    }
}

static int key_is(const fwm_gguf_kv *kv, const char *key) {
    return kv->key.length == strlen(key) && memcmp(kv->key.data, key, kv->key.length) == 0;
}

static void print_metadata(const fwm_gguf_file *f) {
    printf("metadata (%" PRIu64 " keys):\n", f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const fwm_gguf_kv *kv = &f->kvs[i];
        int key_length = (int)(kv->key.length < 60 ? kv->key.length : 60);
        printf("  %-34.*s ", key_length, kv->key.data);
        if (kv->type != FWM_GGUF_TYPE_ARRAY) {
            printf("%-8s ", fwm__gguf_type_name(kv->type));
            int hex = kv->type == FWM_GGUF_TYPE_UINT64 &&
                      (key_is(kv, FWM_KEY_CHECKSUM) || key_is(kv, FWM_KEY_FINGERPRINT));
            if (hex)
                printf("0x%016" PRIx64, fwm__gguf_read_u64(kv->value));
            else
                print_scalar(kv->type, kv->value);
            putchar('\n');
            continue;
        }
        printf("array of %s [%" PRIu64 "]: [", fwm__gguf_type_name(kv->array_type),
               kv->array_count);
        const uint8_t *p = kv->value;
        uint64_t shown = kv->array_count < SHOWN_ELEMENTS ? kv->array_count : SHOWN_ELEMENTS;
        for (uint64_t j = 0; j < shown; j++) {
            if (j) printf(", ");
            p += print_scalar(kv->array_type, p);
        }
        if (shown < kv->array_count) printf(", ... %" PRIu64 " more", kv->array_count - shown);
        printf("]\n");
    }
}

static void print_tensors(const fwm_gguf_file *f) {
    printf("\ntensors (%" PRIu64 ", data section at offset %" PRIu64 ", alignment %" PRIu64 "):\n",
           f->n_tensors, f->data_offset, f->alignment);
    printf("  %-20s %-5s %-20s %12s %12s\n", "name", "type", "shape [rows, cols]", "offset",
           "bytes");
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const fwm_gguf_tensor_info *t = &f->tensors[i];
        char shape[96];
        size_t used = 0;
        for (uint32_t d = t->n_dims; d-- > 0 && used < sizeof shape;)
            used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%" PRIu64,
                                     d + 1 == t->n_dims ? "[" : ", ", t->dims[d]);
        if (used < sizeof shape) snprintf(shape + used, sizeof shape - used, "]");
        printf("  %-20.*s %-5s %-20s %12" PRIu64 " %12" PRIu64 "\n",
               (int)(t->name.length < 64 ? t->name.length : 64), t->name.data,
               fwm__ggml_type_name(t->type), shape, t->file_offset, t->n_bytes);
    }
}

/* The start words: the prime tokens, or the default. */
static void print_start(const fwm__schema_head *head) {
    uint32_t count = head->prime_count;
    printf("session start: %" PRIu32 " prime token%s [", count, count == 1 ? "" : "s");
    for (uint32_t i = 0; i < count; i++)
        printf("%s\"%s\"", i ? ", " : "", head->tokens[head->prime_tokens[i]]);
    printf("]%s\n", head->has_prime_tokens
                        ? ""
                        : " (the default: the file has no " FWM_KEY_PRIME_TOKENS " key)");
}

/* How the step multiplies: the matmul type and the tensors stored in BF16 (fwm and lstm). */
static void print_matmul(const fwm__schema_head *head, const fwm_schema_tensor *tensors, size_t n) {
    size_t bf16 = 0;
    for (size_t i = 0; i < n; i++) bf16 += tensors[i].type == FWM_GGML_TYPE_BF16;
    if (head->bf16_matmul)
        printf("matmul: bf16 (" FWM_KEY_MATMUL_TYPE " \"bf16\": %zu BF16 matri%s multiplied in BF16, "
               "activations rounded to BF16; the rest F32)\n",
               bf16, bf16 == 1 ? "x" : "ces");
    else
        printf("matmul: f32 (every tensor widened to F32%s)\n",
               bf16 ? ", BF16 ones included: the file has no " FWM_KEY_MATMUL_TYPE " \"bf16\"" : "");
}

/* The matmul line of the architectures that may multiply in BF16; the others have none. */
static void matmul_fwm(const fwm_schema *s) { print_matmul(&s->head, s->tensors, (size_t)fwm__tensor_count(&s->hp)); }
static void matmul_lstm(const fwm_lstm_schema *s) { print_matmul(&s->head, s->tensors, s->tensor_count); }
static void matmul_mnm(const fwm_mnm_schema *s) { (void)s; }
static void matmul_gfw(const fwm_gfw_schema *s) { (void)s; }
static void matmul_stm(const fwm_stm_schema *s) { (void)s; }

/* The checksum and fingerprint lines; returns the exit status. */
static int verify(const char *path, const fwm__schema_head *head, uint64_t checksum,
                  uint64_t fingerprint) {
    int has_checksum = head->has_checksum, has_fingerprint = head->has_fingerprint;
    uint64_t stored_checksum = head->checksum, stored_fingerprint = head->fingerprint;
    int status = 0;
    if (!has_checksum)
        printf("checksum: absent (the file has no %s key; data hashes to 0x%016" PRIx64 ")\n",
               FWM_KEY_CHECKSUM, checksum);
    else if (stored_checksum == checksum)
        printf("checksum: verified (0x%016" PRIx64 ")\n", checksum);
    else {
        printf("checksum: MISMATCH\n");
        fprintf(stderr,
                "fwm-inspect: %s: checksum mismatch: %s is 0x%016" PRIx64
                " but the tensor data hashes to 0x%016" PRIx64 "\n",
                path, FWM_KEY_CHECKSUM, stored_checksum, checksum);
        status = 1;
    }
    if (!has_fingerprint)
        printf("fingerprint: 0x%016" PRIx64 " (computed; the file stores none)\n", fingerprint);
    else if (stored_fingerprint == fingerprint)
        printf("fingerprint: 0x%016" PRIx64 " (stored, matches)\n", fingerprint);
    else {
        printf("fingerprint: MISMATCH\n");
        fprintf(stderr,
                "fwm-inspect: %s: fingerprint mismatch: %s is 0x%016" PRIx64
                " but the model computes to 0x%016" PRIx64 "\n",
                path, FWM_KEY_FINGERPRINT, stored_fingerprint, fingerprint);
        status = 1;
    }
    return status;
}

/* The FWM's lines: its sizes, parameters and session state. */
static void describe_fwm(const fwm_schema *schema) {
    const fwm_hparams *hp = &schema->hp;
    uint64_t state_floats = fwm__session_state_floats(hp);
    printf("architecture: fwm (Fast Weight Memory)\n");
    printf("parameters: %" PRIu64 "\n", fwm__parameter_count(hp));
    char lower[64] = ""; /* a stacked FWM's lower layers */
    if (hp->block_count > 1)
        snprintf(lower, sizeof lower, "; lower layers' h, c: 2 x %u x %" PRIu32,
                 (unsigned)hp->block_count - 1, hp->hidden_size);
    printf("session state: %" PRIu64 " floats, %" PRIu64
           " bytes in fp32 (h, c: 2 x %" PRIu32 "; F: %" PRIu32 " x %" PRIu32 " x %" PRIu32 "%s)\n",
           state_floats, state_floats * 4, hp->hidden_size, hp->memory_s, hp->memory_r,
           hp->memory_t, lower);
}

/* The LSTM baseline's lines: its sizes, parameters and session state. */
static void describe_lstm(const fwm_lstm_schema *schema) {
    const fwm_lstm_hparams *hp = &schema->hp;
    uint64_t parameters = 0;
    for (size_t i = 0; i < schema->tensor_count; i++)
        parameters += schema->tensors[i].rows * schema->tensors[i].cols;
    uint64_t state_floats = 2 * (uint64_t)hp->layer_count * hp->hidden_size;
    printf("architecture: lstm (LSTM baseline: %" PRIu32 " layer%s of %" PRIu32 ", embedding %" PRIu32
           ", residual %s, forget bias %g, vocabulary %" PRIu32 ")\n",
           hp->layer_count, hp->layer_count == 1 ? "" : "s", hp->hidden_size, hp->embedding_length,
           hp->residual ? "on" : "off", (double)hp->forget_bias, hp->vocab_size);
    printf("parameters: %" PRIu64 "\n", parameters);
    printf("session state: %" PRIu64 " floats, %" PRIu64 " bytes in fp32 (h, c: 2 x %" PRIu32
           " layers x %" PRIu32 ")\n",
           state_floats, state_floats * 4, hp->layer_count, hp->hidden_size);
}

/* The MNM baseline's lines: its sizes, parameters and session state. */
static void describe_mnm(const fwm_mnm_schema *schema) {
    const fwm_mnm_hparams *hp = &schema->hp;
    uint64_t parameters = 0, trained = 0;
    for (size_t i = 0; i < schema->tensor_count; i++) {
        uint64_t n = schema->tensors[i].rows * schema->tensors[i].cols;
        parameters += n;
        if (fwm__mnm_tensor_trained(hp, i)) trained += n;
    }
    uint64_t memory = fwm__mnm_memory_elements(hp), state_floats = fwm__mnm_hparams_state_floats(hp);
    printf("architecture: mnm (Metalearned Neural Memory baseline: controller %" PRIu32
           ", embedding %" PRIu32 ", %" PRIu32 " head%s, keys %" PRIu32 ", values %" PRIu32
           ", memory %" PRIu32 " layer%s of %" PRIu32 ", output %" PRIu32 ", forget bias %g, vocabulary %" PRIu32
           ")\n",
           hp->hidden_size, hp->embedding_length, hp->head_count, hp->head_count == 1 ? "" : "s",
           hp->key_length, hp->value_length, hp->memory_layers, hp->memory_layers == 1 ? "" : "s",
           hp->memory_hidden, hp->output_length, (double)hp->forget_bias, hp->vocab_size);
    printf("parameters: %" PRIu64 "\n", parameters);
    printf("trained: %" PRIu64 " (the rest, %" PRIu64 ", is the fixed initial memory)\n", trained,
           parameters - trained);
    printf("session state: %" PRIu64 " floats, %" PRIu64 " bytes in fp32 (h, c: 2 x %" PRIu32
           "; r: %" PRIu32 "; memory: %" PRIu64 ")\n",
           state_floats, state_floats * 4, hp->hidden_size, hp->value_length, memory);
}

/* The GFW's lines: its sizes, parameters and session state. */
static void describe_gfw(const fwm_gfw_schema *schema) {
    const fwm_gfw_hparams *hp = &schema->hp;
    uint64_t state_floats = fwm__gfw_hparams_state_floats(hp), m = hp->fast_hidden;
    printf("architecture: gfw (Gated Fast Weights: fast net %" PRIu32 ", slow net %" PRIu32
           " with transition layer %" PRIu32 ", embedding %" PRIu32 ", layer norm eps %g, vocabulary %" PRIu32
           ")\n",
           hp->fast_hidden, hp->slow_hidden, hp->slow_inner, hp->embedding_length,
           (double)hp->layer_norm_epsilon, hp->vocab_size);
    printf("parameters: %" PRIu64 "\n", fwm__gfw_parameter_count(hp));
    printf("session state: %" PRIu64 " floats, %" PRIu64 " bytes in fp32 (h_F: %" PRIu32 "; h_S: %" PRIu32
           "; F1: %" PRIu64 " x %" PRIu64 "; F2: %" PRIu64 " x %" PRIu64 ")\n",
           state_floats, state_floats * 4, hp->fast_hidden, hp->slow_hidden, m, fwm__gfw_f1_cols(hp), m,
           fwm__gfw_f2_cols(hp));
}

/* The STM's lines: its sizes, parameters and session state. */
static void describe_stm(const fwm_stm_schema *schema) {
    const fwm_stm_hparams *hp = &schema->hp;
    uint64_t parameters = 0;
    for (size_t i = 0; i < schema->tensor_count; i++) parameters += schema->tensors[i].rows * schema->tensors[i].cols;
    bool sentence = hp->input_mode == FWM_STM_INPUT_SENTENCE;
    printf("architecture: stm (self-attentive associative memory: %s mode, embedding %" PRIu32
           ", memory %" PRIu32 ", %" PRIu32 " queries, ",
           sentence ? "sentence" : "word", hp->embedding_length, hp->memory_size, hp->query_count);
    if (sentence)
        printf("sentences of up to %" PRIu32 " words, answer MLPs %" PRIu32, hp->sentence_length,
               hp->answer_hidden);
    else
        printf("relation length %" PRIu32, hp->relation_length);
    printf(", end words '%s' and '%s', reset on eos %s, vocabulary %" PRIu32 ")\n",
           schema->head.tokens[hp->statement_end_token_id], schema->head.tokens[hp->question_end_token_id],
           hp->reset_on_eos ? "on" : "off", hp->vocab_size);
    printf("parameters: %" PRIu64 "\n", parameters);
    printf("initial memories: %" PRIu64 " of them (stm.item.init, stm.relation.init)\n",
           fwm__stm_hparams_state_floats(hp));
    printf("session state: %" PRIu64 " floats, %" PRIu64 " bytes in fp32 (Mi: %" PRIu32 " x %" PRIu32
           "; Mr: %" PRIu32 " x %" PRIu32 " x %" PRIu32 "%s)\n",
           fwm__stm_hparams_state_floats(hp), fwm__stm_state_bytes(hp), hp->memory_size, hp->memory_size,
           hp->query_count, hp->memory_size, hp->memory_size, sentence ? "; the sentence buffer" : "");
}

/* A model file of one architecture: its schema parsed (or the reason it is not valid), the model's
 * name, the architecture's own lines (describe_ARCH), the start words, the matmul line (matmul_ARCH),
 * and the checksum and fingerprint (a BF16 model's wrapped, fwm__fingerprint_matmul) verified;
 * returns the exit status. Written once for every architecture's schema. */
#define INSPECT_ARCH(arch, schema_type, parse, checksum_of, fingerprint_of, release)                    \
    static int inspect_##arch(const char *path, const uint8_t *data, size_t size) {                     \
        schema_type schema;                                                                             \
        fwm_error err;                                                                                  \
        fwm_status st = parse(data, size, &schema, &err);                                               \
        if (st) {                                                                                       \
            fprintf(stderr, "fwm-inspect: %s: not a valid " #arch " model (%s): %s\n", path,            \
                    fwm_status_str(st), err.message);                                                   \
            return 1;                                                                                   \
        }                                                                                               \
        printf("\nmodel: %s\n", schema.head.name[0] ? schema.head.name : "(unnamed)");                  \
        describe_##arch(&schema);                                                                       \
        print_start(&schema.head);                                                                      \
        matmul_##arch(&schema);                                                                         \
        uint64_t checksum = checksum_of(&schema);                                                       \
        uint64_t fingerprint = fwm__fingerprint_matmul(                                                 \
            fingerprint_of(&schema.hp, (const char *const *)schema.head.tokens,                         \
                           schema.head.token_lengths, checksum),                                        \
            schema.head.bf16_matmul);                                                                   \
        int status = verify(path, &schema.head, checksum, fingerprint);                                 \
        release(&schema);                                                                               \
        return status;                                                                                  \
    }

INSPECT_ARCH(fwm, fwm_schema, fwm__schema_parse, fwm__schema_checksum,
             fwm__schema_fingerprint, fwm__schema_release)
INSPECT_ARCH(lstm, fwm_lstm_schema, fwm__lstm_schema_parse, fwm__lstm_schema_checksum,
             fwm__lstm_fingerprint, fwm__lstm_schema_release)
INSPECT_ARCH(mnm, fwm_mnm_schema, fwm__mnm_schema_parse, fwm__mnm_schema_checksum,
             fwm__mnm_fingerprint, fwm__mnm_schema_release)
INSPECT_ARCH(gfw, fwm_gfw_schema, fwm__gfw_schema_parse, fwm__gfw_schema_checksum,
             fwm__gfw_fingerprint, fwm__gfw_schema_release)
INSPECT_ARCH(stm, fwm_stm_schema, fwm__stm_schema_parse, fwm__stm_schema_checksum,
             fwm__stm_fingerprint, fwm__stm_schema_release)

/* Each architecture's inspection, by fwm_arch. */
static int (*const inspect_arch[FWM_ARCH_COUNT])(const char *path, const uint8_t *data, size_t size) = {
#define INSPECT_ENTRY(id, name, prefix) [FWM_ARCH_##id] = inspect_##prefix,
    FWM_ARCH_LIST(INSPECT_ENTRY)
#undef INSPECT_ENTRY
};

/* --vocab: every token of tokenizer.ggml.tokens with its id. */
static int print_vocab(const char *path, const fwm_gguf_file *file) {
    const fwm_gguf_kv *kv = fwm__gguf_find_key(file, "tokenizer.ggml.tokens");
    if (!kv || kv->type != FWM_GGUF_TYPE_ARRAY || kv->array_type != FWM_GGUF_TYPE_STRING) {
        fprintf(stderr, "fwm-inspect: %s: no vocabulary (key 'tokenizer.ggml.tokens', an array of "
                        "strings)\n", path);
        return 1;
    }
    const uint8_t *p = kv->value;
    for (uint64_t i = 0; i < kv->array_count; i++) {
        fwm_gguf_string w = fwm__gguf_next_string(&p);
        printf("%" PRIu64 "\t%.*s\n", i, (int)w.length, w.data);
    }
    return 0;
}

int main(int argc, char **argv) {
    int vocab = argc == 3 && strcmp(argv[1], "--vocab") == 0;
    if (vocab) {
        argv++;
        argc--;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        usage(stderr);
        return 2;
    }
    const char *path = argv[1];
    uint8_t *data;
    size_t size;
    if (!fwm__tool_read_file("fwm-inspect", path, &data, &size)) return 1;

    fwm_gguf_file file;
    fwm_error err;
    fwm_status st = fwm__gguf_parse(data, size, &file, &err);
    if (st) {
        fprintf(stderr, "fwm-inspect: %s: not a valid GGUF file (%s): %s\n", path,
                fwm_status_str(st), err.message);
        free(data);
        return 1;
    }
    if (vocab) {
        int status = print_vocab(path, &file);
        fwm__gguf_release(&file);
        free(data);
        return status;
    }
    printf("file: %s (%zu bytes, GGUF version %" PRIu32 ")\n", path, size, file.version);
    print_metadata(&file);
    print_tensors(&file);
    fwm_arch arch = FWM_ARCH_FWM;
    st = fwm__arch_of_file(&file, &arch, &err);
    fwm__gguf_release(&file);
    int status = 1;
    if (st)
        fprintf(stderr, "fwm-inspect: %s: not a model fwm knows (%s): %s\n", path, fwm_status_str(st),
                err.message);
    else
        status = inspect_arch[arch](path, data, size);
    free(data);
    fflush(stdout);
    return status;
}
