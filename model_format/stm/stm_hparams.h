/* stm_hparams.h - the Self-attentive Associative Memory model (`general.architecture = "stm"`, the
 * SAM-based Two-memory Model STM of Le, Tran & Venkatesh, ICML 2020): its hyperparameters, their one
 * key list, and its one tensor list.
 *
 * The model (docs/MODEL.md, "The STM (self-attentive associative memory)"). State: an item memory
 * Mi [d, d] and a relational memory Mr [n_q, d, d], both set to trained initial tensors at reset.
 * One step reads an input vector x (E): a sentence vector in sentence mode, a word's embedding in
 * word mode. a = W1 x + b1 (d), c = W2 x + b2 (d), z = softmax(W3 x + b3) (n_q).
 * Item write: gates G = Wg a + Ug tanh(Mi[r]) + bg per row r (2d: input half, forget half),
 * Mi' = sigmoid(G_i) * tanh(a a^T) + sigmoid(G_f) * Mi. Relational read: vr[f] = sum_{s,e} z[s] c[e]
 * Mr[s, e, f]. SAM on A = Mi' + alpha2 vr c^T: P = LN_[3n_q x d](Wqkv A^T + bqkv) (rows q, k, v),
 * S[s] = sum_j tanh(q_s * k_j) v_j^T (n_q x d x d). Transfer: Mi = Mi' + alpha3 (G1 . S)
 * (G1: [d, n_q d]); relational write: Mr = alpha1 * Mr + S. Heads: sentence mode answers a question
 * q (E) with the TPR-RNN inference module over Mr; word mode predicts every next word with
 * logits = G3 flat(G2 Mr[s] + g2) + g3.
 *
 * FWM_STM_HPARAM_LIST has the same columns and kinds as FWM_HPARAM_LIST (fwm_hparams.h).
 * fwm__stm_tensor_at is the one tensor list, in file (writer and checksum) order: the encoder, the
 * core, the initial memories, then the mode's head; the list depends on the input mode.
 *
 * Counts (docs/MODEL.md's STM section; V = 180): sentence mode at the paper's bAbI sizes (E 64,
 * P 16, d 90, n_q 20, answer MLPs 80) 456,267 floats; word mode at the catbAbI size (E 256, d 56,
 * n_q 12, n_r 96) 683,839 floats. Session state, d^2 (1 + n_q) floats: 170,100 (plus 18 u32 of
 * sentence buffer) and 40,768.
 */
#ifndef FWM_MODEL_FORMAT_STM_HPARAMS_H
#define FWM_MODEL_FORMAT_STM_HPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fwm_hparams.h" /* FWM_MAX_VOCAB_SIZE, FWM_MAX_DIM */

/* How a session turns tokens into steps (stm.input_mode). */
typedef enum fwm_stm_input_mode {
    FWM_STM_INPUT_SENTENCE = 0, /* the paper's bAbI reading: one step per sentence, answers at "?" */
    FWM_STM_INPUT_WORD = 1      /* one step per word, next-word logits at every word (catbAbI) */
} fwm_stm_input_mode;

#define FWM_STM_MAX_SENTENCE_LENGTH 256u
#define FWM_STM_MAX_QUERIES 256u
/* Bound on the floats of one session's memories, d^2 (1 + n_q), checked with the sizes. */
#define FWM_STM_MAX_MEMORY_ELEMENTS (1u << 26)

typedef struct fwm_stm_hparams {
    uint32_t vocab_size;             /* V, stm.vocab_size */
    uint32_t input_mode;             /* stm.input_mode: fwm_stm_input_mode */
    uint32_t embedding_length;       /* E, stm.embedding_length: word embeddings and step inputs */
    uint32_t sentence_length;        /* P, stm.sentence.max_length: positional weights (sentence mode) */
    uint32_t memory_size;            /* d, stm.memory.size: Mi is d x d, each Mr[s] is d x d */
    uint32_t query_count;            /* n_q, stm.memory.query_count: SAM's queries = keys = values */
    uint32_t relation_length;        /* n_r, stm.relation_length: G2's output per query (word mode) */
    uint32_t answer_hidden;          /* H_a, stm.answer.hidden_size: the answer MLPs (sentence mode) */
    float sam_norm_eps;              /* stm.sam.layer_norm_epsilon */
    float answer_norm_eps;           /* stm.answer.layer_norm_epsilon */
    bool reset_on_eos;               /* stm.reset_on_eos: <eos> restores the reset state */
    uint32_t statement_end_token_id; /* stm.statement_end_token_id: "." */
    uint32_t question_end_token_id;  /* stm.question_end_token_id: "?" */
    uint32_t padding_token_id;       /* tokenizer.ggml.padding_token_id */
    uint32_t eos_token_id;           /* tokenizer.ggml.eos_token_id */
} fwm_stm_hparams;

/* X(field, gguf_key, kind, default, low, high): kinds as in FWM_HPARAM_LIST. The defaults are the
 * paper's bAbI model (appendix J, n_q = 20, d = 90, n_r = 96) with the authors' code's encoder and
 * answer sizes (word embedding 64, answer MLPs 80) and layer-norm epsilons (PyTorch's LayerNorm 1e-5
 * in SAM, 1e-12 in the answer module). The end-token ids are "." and "?" of the catbAbI vocabulary
 * (docs/MODEL.md); programs set them from their vocabulary. */
#define FWM_STM_HPARAM_LIST(X)                                                                       \
    X(vocab_size, "stm.vocab_size", U32, 180, 2, FWM_MAX_VOCAB_SIZE)                                 \
    X(input_mode, "stm.input_mode", U32, FWM_STM_INPUT_SENTENCE, 0, 1)                               \
    X(embedding_length, "stm.embedding_length", U32, 64, 1, FWM_MAX_DIM)                             \
    X(sentence_length, "stm.sentence.max_length", U32, 16, 1, FWM_STM_MAX_SENTENCE_LENGTH)           \
    X(memory_size, "stm.memory.size", U32, 90, 1, FWM_MAX_DIM)                                       \
    X(query_count, "stm.memory.query_count", U32, 20, 1, FWM_STM_MAX_QUERIES)                        \
    X(relation_length, "stm.relation_length", U32, 96, 1, FWM_MAX_DIM)                               \
    X(answer_hidden, "stm.answer.hidden_size", U32, 80, 1, FWM_MAX_DIM)                              \
    X(sam_norm_eps, "stm.sam.layer_norm_epsilon", F32_POS, 1e-5f, 0, 0)                              \
    X(answer_norm_eps, "stm.answer.layer_norm_epsilon", F32_POS, 1e-12f, 0, 0)                       \
    X(reset_on_eos, "stm.reset_on_eos", BOOL, true, 0, 0)                                            \
    X(statement_end_token_id, "stm.statement_end_token_id", TOKEN, 7, 0, 0)                          \
    X(question_end_token_id, "stm.question_end_token_id", TOKEN, 13, 0, 0)                           \
    X(padding_token_id, "tokenizer.ggml.padding_token_id", TOKEN, 0, 0, 0)                           \
    X(eos_token_id, "tokenizer.ggml.eos_token_id", TOKEN, 1, 0, 0)

/* Floats of the item memory (d^2), of the relational memory (n_q d^2), and of both: the float part
 * of a session's state. */
static inline uint64_t fwm__stm_item_floats(const fwm_stm_hparams *hp) {
    return (uint64_t)hp->memory_size * hp->memory_size;
}
static inline uint64_t fwm__stm_relational_floats(const fwm_stm_hparams *hp) {
    return (uint64_t)hp->query_count * fwm__stm_item_floats(hp);
}
static inline uint64_t fwm__stm_hparams_state_floats(const fwm_stm_hparams *hp) {
    return fwm__stm_item_floats(hp) + fwm__stm_relational_floats(hp);
}

/* The integer part of a sentence-mode session's state: the buffered word ids (P), then the buffer's
 * length and the answer-slot flag. Word mode keeps none. */
static inline uint64_t fwm__stm_state_words(const fwm_stm_hparams *hp) {
    return hp->input_mode == FWM_STM_INPUT_SENTENCE ? (uint64_t)hp->sentence_length + 2 : 0;
}

/* Bytes of a session's state in single precision: floats, then u32 words. */
static inline uint64_t fwm__stm_state_bytes(const fwm_stm_hparams *hp) {
    return 4 * (fwm__stm_hparams_state_floats(hp) + fwm__stm_state_words(hp));
}

/* The tensor list: the encoder (token_embd.weight, and stm.position.weight in sentence mode only),
 * the core (18 tensors, the initial memories last), then the mode's head (sentence: the answer
 * module, 18; word: G2 and G3, 4). Names and shapes are in fwm__stm_tensor_at. */
#define FWM_STM_CORE_TENSORS 18u
#define FWM_STM_SENTENCE_HEAD_TENSORS 18u
#define FWM_STM_WORD_HEAD_TENSORS 4u
#define FWM_STM_MAX_TENSORS (2u + FWM_STM_CORE_TENSORS + FWM_STM_SENTENCE_HEAD_TENSORS)

static inline size_t fwm__stm_tensor_count(const fwm_stm_hparams *hp) {
    return hp->input_mode == FWM_STM_INPUT_SENTENCE
               ? 2 + FWM_STM_CORE_TENSORS + FWM_STM_SENTENCE_HEAD_TENSORS
               : 1 + FWM_STM_CORE_TENSORS + FWM_STM_WORD_HEAD_TENSORS;
}

/* The i-th tensor in file order (i < fwm__stm_tensor_count(hp)): its name (into name[48]) and shape
 * (cols = 1 for vectors; matrices are row-major [rows, cols], y = W x means W is [out, in]). */
static inline void fwm__stm_tensor_at(const fwm_stm_hparams *hp, size_t i, char name[48],
                                     uint64_t *rows, uint64_t *cols) {
    uint64_t V = hp->vocab_size, E = hp->embedding_length, d = hp->memory_size;
    uint64_t nq = hp->query_count, nr = hp->relation_length, Ha = hp->answer_hidden;
    bool sentence = hp->input_mode == FWM_STM_INPUT_SENTENCE;
    size_t lead = sentence ? 2 : 1;
    *cols = 1;
    if (i < lead) {
        if (i == 0) {
            snprintf(name, 48, "token_embd.weight");
            *rows = V;
            *cols = E;
        } else {
            snprintf(name, 48, "stm.position.weight");
            *rows = hp->sentence_length;
            *cols = E;
        }
        return;
    }
    i -= lead;
    if (i < FWM_STM_CORE_TENSORS) {
        static const char *const names[FWM_STM_CORE_TENSORS] = {
            "stm.write.weight",    "stm.write.bias",      "stm.value.weight",    "stm.value.bias",
            "stm.select.weight",   "stm.select.bias",     "stm.gate.input",      "stm.gate.memory",
            "stm.gate.bias",       "stm.sam.weight",      "stm.sam.bias",        "stm.sam.norm.weight",
            "stm.sam.norm.bias",   "stm.alpha",           "stm.transfer.weight", "stm.transfer.bias",
            "stm.item.init",       "stm.relation.init"};
        snprintf(name, 48, "%s", names[i]);
        switch (i) {
        case 0: *rows = d; *cols = E; break;         /* W1 */
        case 1: *rows = d; break;                    /* b1 */
        case 2: *rows = d; *cols = E; break;         /* W2 */
        case 3: *rows = d; break;                    /* b2 */
        case 4: *rows = nq; *cols = E; break;        /* W3 */
        case 5: *rows = nq; break;                   /* b3 */
        case 6: *rows = 2 * d; *cols = d; break;     /* Wg: input half, then forget half */
        case 7: *rows = 2 * d; *cols = d; break;     /* Ug */
        case 8: *rows = 2 * d; break;                /* bg */
        case 9: *rows = 3 * nq; *cols = d; break;    /* Wqkv: q rows, k rows, v rows */
        case 10: *rows = 3 * nq; break;              /* bqkv */
        case 11: *rows = 3 * nq; *cols = d; break;   /* SAM layer-norm gain, in P's layout */
        case 12: *rows = 3 * nq; *cols = d; break;   /* SAM layer-norm bias */
        case 13: *rows = 3; break;                   /* alpha1, alpha2, alpha3 */
        case 14: *rows = d; *cols = nq * d; break;   /* G1 */
        case 15: *rows = d; break;                   /* g1 */
        case 16: *rows = d; *cols = d; break;        /* Mi at reset */
        default: *rows = nq * d; *cols = d; break;   /* Mr at reset: query s, row e at s d + e */
        }
        return;
    }
    i -= FWM_STM_CORE_TENSORS;
    if (sentence) {
        /* The answer module: an entity MLP (E -> H_a -> d) and three role MLPs (E -> H_a -> n_q),
         * each two tanh layers; three layer norms of d; the output matrix Z. */
        if (i < 16) {
            size_t mlp = i / 4, k = i % 4;
            bool entity = mlp == 0;
            uint64_t out = entity ? d : nq;
            if (entity)
                snprintf(name, 48, "stm.answer.entity.%s",
                         k == 0 ? "weight1" : k == 1 ? "bias1" : k == 2 ? "weight2" : "bias2");
            else if (k == 0)
                snprintf(name, 48, "stm.answer.role.%u.weight1", (unsigned)(mlp - 1));
            else if (k == 1)
                snprintf(name, 48, "stm.answer.role.%u.bias1", (unsigned)(mlp - 1));
            else if (k == 2)
                snprintf(name, 48, "stm.answer.role.%u.weight2", (unsigned)(mlp - 1));
            else
                snprintf(name, 48, "stm.answer.role.%u.bias2", (unsigned)(mlp - 1));
            switch (k) {
            case 0: *rows = Ha; *cols = E; break;
            case 1: *rows = Ha; break;
            case 2: *rows = out; *cols = Ha; break;
            default: *rows = out; break;
            }
            return;
        }
        if (i == 16) {
            snprintf(name, 48, "stm.answer.norm"); /* gain1, bias1, gain2, bias2, gain3, bias3 */
            *rows = 6;
            *cols = d;
        } else {
            snprintf(name, 48, "output.weight"); /* Z: logits = Z (i1 + i2 + i3), no bias */
            *rows = V;
            *cols = d;
        }
        return;
    }
    switch (i) {
    case 0:
        snprintf(name, 48, "stm.distill.weight"); /* G2 */
        *rows = nr;
        *cols = d * d;
        break;
    case 1:
        snprintf(name, 48, "stm.distill.bias");
        *rows = nr;
        break;
    case 2:
        snprintf(name, 48, "output.weight"); /* G3 */
        *rows = V;
        *cols = nq * nr;
        break;
    default:
        snprintf(name, 48, "output.bias");
        *rows = V;
        break;
    }
}

/* ---- implemented in model_format/stm/ ---- */
#include "fwm_schema.h" /* fwm_write_kv */

/* The paper's bAbI sizes (the list's defaults). */
void fwm__stm_hparams_defaults(fwm_stm_hparams *hp);

/* Range and consistency checks of the list, naming the key: token ids below V; in sentence mode the
 * two end tokens differ from each other and from the padding and eos ids; d^2 (1 + n_q) at most
 * FWM_STM_MAX_MEMORY_ELEMENTS and every tensor's element count below 2^32. FWM_ERR_INVALID_ARGUMENT. */
fwm_status fwm__stm_hparams_valid(const fwm_stm_hparams *hp, fwm_error *err);

/* What the writer needs: F32 tensors in fwm__stm_tensor_at order; other fields as fwm_write_spec. */
typedef struct fwm_stm_write_spec {
    fwm_stm_hparams hp;
    fwm__write_head head; /* name, vocabulary, extra keys, prime tokens */
    const float *tensors[FWM_STM_MAX_TENSORS];
} fwm_stm_write_spec;

/* Write a complete `stm` model file atomically, as fwm__model_write does for `fwm`.
 * FWM_ERR_IO, FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY. */
fwm_status fwm__stm_model_write(const char *path, const fwm_stm_write_spec *spec, fwm_error *err);

#endif
