/* fwm.h - the public C API of libfwm, the Fast Weight Memory inference runtime.
 *
 * What it is for: load a model file (GGUF v3) of a registered architecture: "fwm", the Fast Weight
 * Memory, "lstm", the paper's LSTM baseline, "mnm", the Metalearned Neural Memory baseline, "gfw",
 * the Gated Fast Weights model, or "stm", the STM (fwm_model_info.architecture says which); keep
 * per-session state (for the FWM: LSTM h, c and the fast-weight tensor F; for the LSTM: h and c of
 * every layer; for the MNM: the controller's h and c, its read-out r and its memory net's weights;
 * for the GFW: its two nets' states and its two fast matrices; for the STM: its item and relational
 * memories, and in sentence mode the sentence being read and the answer slot) resident, and step
 * one session, a token sequence, or a batch of sessions token by token. Every function works on
 * every architecture unless it says otherwise. Also: the word-level tokenizer, top-k over logits,
 * and export / import of a session's state as a versioned blob tied to the model's fingerprint.
 *
 * What it is not for: sockets, training, printing. The library never prints, never exits, never
 * aborts on bad input and keeps no global error state. Every fallible function returns an
 * fwm_status and, when `err` is non-NULL, fills it with a message naming the problem.
 *
 * Threading: a loaded fwm_model is immutable and may be shared by any number of threads. A
 * fwm_session may be used by one thread at a time; distinct sessions may be stepped concurrently
 * from different threads (each call allocates its own scratch space).
 *
 * Ownership: every object returned through an `out` pointer is owned by the caller and released with
 * its `*_free` function; `*_free(NULL)` is a no-op. Sessions borrow their model: free every session
 * of a model before the model. Strings returned by the library live as long as the object they
 * came from.
 */
#ifndef FWM_FWM_H
#define FWM_FWM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwm/fwm_export.h"
#include "fwm/fwm_version.h" /* FWM_VERSION_MAJOR, _MINOR, _PATCH, _STRING */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes ------------------------------------------------------------------------------
 * One X-macro table generates the enum and fwm_status_str(). Codes are stable: new ones are added
 * at the end. X(name, value, short description) */
#define FWM_STATUS_LIST(X)                                                                  \
    X(FWM_OK, 0, "ok")                                                                      \
    X(FWM_ERR_INVALID_ARGUMENT, 1, "invalid argument")                                      \
    X(FWM_ERR_OUT_OF_MEMORY, 2, "out of memory")                                            \
    X(FWM_ERR_IO, 3, "input/output error")                                                  \
    X(FWM_ERR_FORMAT, 4, "malformed model file")                                            \
    X(FWM_ERR_CHECKSUM, 5, "model file checksum mismatch")                                  \
    X(FWM_ERR_UNSUPPORTED, 6, "unsupported model feature")                                  \
    X(FWM_ERR_UNKNOWN_WORD, 7, "unknown word")                                              \
    X(FWM_ERR_TOKEN_OUT_OF_RANGE, 8, "token id out of range")                               \
    X(FWM_ERR_BUFFER_TOO_SMALL, 9, "buffer too small")                                      \
    X(FWM_ERR_STATE_MODEL_MISMATCH, 10, "session state belongs to another model")           \
    X(FWM_ERR_STATE_CORRUPT, 11, "session state blob is damaged")                           \
    X(FWM_ERR_MODEL_MISMATCH, 12, "sessions belong to different models")

typedef enum fwm_status {
#define FWM_STATUS_ENUM_(name, value, text) name = value,
    FWM_STATUS_LIST(FWM_STATUS_ENUM_)
#undef FWM_STATUS_ENUM_
} fwm_status;

/* Short, static description of a status ("unknown word"); never NULL ("unknown status" for values
 * outside the table). Thread-safe. */
FWM_API const char *fwm_status_str(fwm_status status);

/* An error record filled by fallible functions when the caller passes one. `message` names the
 * problem precisely (which key, tensor, word, offset; what was expected and what was found). */
#define FWM_ERROR_MESSAGE_SIZE 320
typedef struct fwm_error {
    fwm_status status;                    /* same value the function returned */
    char message[FWM_ERROR_MESSAGE_SIZE]; /* NUL-terminated, never empty on failure */
} fwm_error;

/* ---- model -------------------------------------------------------------------------------------- */
typedef struct fwm_model fwm_model;

typedef enum fwm_read_policy {
    FWM_READ_ALWAYS = 0, /* read the memory at every step ("always") */
    FWM_READ_ON_TOKEN = 1 /* read only where the input token is read_token_id ("token"); elsewhere the
                             read-out is zero */
} fwm_read_policy;

typedef struct fwm_model_params {
    bool use_mmap;        /* map the file and use aligned F32 tensors in place (default true); false
                             reads the whole file into memory */
    bool verify_checksum; /* verify the tensor-data checksum if the file has one (default true) */
} fwm_model_params;

/* Defaults: use_mmap = true, verify_checksum = true. */
FWM_API fwm_model_params fwm_model_default_params(void);

/* Load a model file. `params` may be NULL (defaults). On success *out owns the model.
 * Returns FWM_ERR_IO (cannot open/read/map), FWM_ERR_FORMAT (any structural problem, named),
 * FWM_ERR_CHECKSUM, FWM_ERR_UNSUPPORTED, FWM_ERR_OUT_OF_MEMORY, FWM_ERR_INVALID_ARGUMENT. */
FWM_API fwm_status fwm_model_load(const char *path, const fwm_model_params *params, fwm_model **out,
                                  fwm_error *err);

/* Load a model from a caller-owned buffer that holds a whole model file. The buffer is copied when
 * the tensors cannot be used in place; otherwise it must outlive the model. Same errors as
 * fwm_model_load (except FWM_ERR_IO). */
FWM_API fwm_status fwm_model_load_from_buffer(const void *data, size_t size, const fwm_model_params *params,
                                              fwm_model **out, fwm_error *err);

FWM_API void fwm_model_free(fwm_model *model);

/* The FWM-only fields (memory_*, read_*, beta_bias, write_scale, layer_norm_eps) are 0 for other
 * architectures. */
typedef struct fwm_model_info {
    uint32_t vocab_size;       /* V */
    uint32_t embedding_length; /* E */
    uint32_t hidden_size;      /* H (the GFW: its fast net's m) */
    uint32_t memory_s;         /* S: first key size */
    uint32_t memory_r;         /* R: second key size */
    uint32_t memory_t;         /* T: value size */
    uint32_t read_count;       /* N_r: chained reads per step */
    bool residual;             /* add h to the read-out */
    fwm_read_policy read_policy;
    uint32_t read_token_id; /* token that triggers a read under FWM_READ_ON_TOKEN */
    float forget_bias, beta_bias, write_scale, layer_norm_eps;
    uint32_t padding_token_id, eos_token_id;
    uint64_t parameter_count;     /* total number of weights */
    size_t session_state_floats;  /* floats of per-session state: 2H + S*R*T (FWM), 2LH (LSTM) */
    size_t session_state_bytes;   /* bytes a session holds (state plus bookkeeping) */
    size_t state_blob_bytes;      /* exact size of an exported state blob */
    uint64_t fingerprint;         /* identifies the model (hyperparameters, vocabulary, weights) */
    bool has_checksum;            /* the file carries a tensor-data checksum */
    bool checksum_verified;       /* it was present and verified at load */
    const char *name;             /* general.name, or "" */
    /* The tokens a session reads first when primed (fwm_session_prime): the file's
     * fwm.session.prime_tokens, or one token, eos_token_id, for a file without that key. */
    uint32_t prime_token_count;
    const uint32_t *prime_tokens; /* owned by the model */
    const char *architecture;     /* general.architecture: "fwm", "lstm", "mnm", "gfw" or "stm"
                                   * (static) */
    uint32_t layer_count;         /* stacked recurrent layers: 1 for the FWM, L for the LSTM, 1 for
                                   * the MNM (its controller), for the GFW and for the STM */
    /* Whether every step predicts the next token: true for every architecture but an stm model in
     * sentence mode, which predicts only at a question's end (fwm_session_has_prediction). */
    bool predicts_every_token;
    /* The STM's reading of tokens (docs/MODEL.md, "The STM"); 0 / false for other architectures.
     * sentence_input: sentence mode (one step per sentence, answers after the question end) rather
     * than word mode; the two end tokens; max_sentence_words: the words of a sentence it encodes
     * (P, sentence mode); reset_on_eos: eos_token_id restores the reset state. */
    bool sentence_input;
    uint32_t statement_end_token_id, question_end_token_id;
    uint32_t max_sentence_words;
    bool reset_on_eos;
    /* How text becomes tokens (fwm_tokenize): "word", the catbAbI word tokenizer, or "text", the
     * text rules of common/fwm_text.h (prose, a paragraph per line); static. */
    const char *tokenizer;
    /* The token words outside the vocabulary read as (<unk>), or FWM_NO_TOKEN when the model has
     * none and such a word is refused (FWM_ERR_UNKNOWN_WORD). */
    uint32_t unknown_token_id;
} fwm_model_info;

/* No token: fwm_model_info.unknown_token_id of a model without <unk>. */
#define FWM_NO_TOKEN UINT32_MAX

/* Fill *info. Thread-safe. */
FWM_API void fwm_model_get_info(const fwm_model *model, fwm_model_info *info);

/* The next-word scores (V floats, owned by the model) of a session in the start state
 * (fwm_session_prime): what the step over the last prime token returned. NULL when the model has no
 * prime tokens, or when that step predicted nothing (fwm_session_has_prediction). */
FWM_API const float *fwm_model_start_logits(const fwm_model *model);

/* The text of token `id`, or NULL when id >= V. */
FWM_API const char *fwm_model_token_text(const fwm_model *model, uint32_t id);

/* Look up a word (exact, case-sensitive, `length` bytes). FWM_ERR_UNKNOWN_WORD if absent. */
FWM_API fwm_status fwm_model_token_id(const fwm_model *model, const char *word, size_t length,
                                      uint32_t *id);

/* ---- tokenizer -----------------------------------------------------------------------------------
 * By the model's tokenizer (fwm_model_info.tokenizer):
 * "word", as in catbAbI: ASCII lower-casing, split on white space, and a "." or "?" that ends a
 * word is a token of its own ("Where is Mary?" -> where is mary ?). Commas stay inside words
 * ("n,w" is one token).
 * "text", prose (common/fwm_text.h, the rules the model was trained with): ASCII lower-casing,
 * punctuation and contractions split off ("Elizabeth's" -> elizabeth 's), a line end after words is
 * "<eos>"; invalid UTF-8 is FWM_ERR_INVALID_ARGUMENT naming the byte.
 * Writes up to `capacity` ids to `tokens`; *count receives the number of tokens in the text even
 * when it does not fit (then FWM_ERR_BUFFER_TOO_SMALL). A word outside the vocabulary reads as the
 * model's unknown token when it has one (fwm_model_info.unknown_token_id); otherwise
 * FWM_ERR_UNKNOWN_WORD names the first such word and its byte offset. */
FWM_API fwm_status fwm_tokenize(const fwm_model *model, const char *text, size_t text_length,
                                uint32_t *tokens, size_t capacity, size_t *count, fwm_error *err);

/* Bytes text[start, start + length) of the text given to fwm_tokenize_spans. */
typedef struct fwm_text_span {
    size_t start, length;
} fwm_text_span;

/* fwm_tokenize, and the words that read as the unknown token: their byte spans in the text go to
 * unknown[0 .. min(*unknown_count, unknown_capacity)), *unknown_count receiving how many there are
 * (never an error: spans past the capacity are only counted). `unknown` may be NULL when
 * unknown_capacity is 0. */
FWM_API fwm_status fwm_tokenize_spans(const fwm_model *model, const char *text, size_t text_length,
                                      uint32_t *tokens, size_t capacity, size_t *count,
                                      fwm_text_span *unknown, size_t unknown_capacity,
                                      size_t *unknown_count, fwm_error *err);

/* The natural log of the probability the scores `logits` (V floats, as fwm_session_step writes)
 * give token `id` under a softmax at temperature `temperature` (> 0; 1 for the model's own):
 * logits[id] / T - log(sum_j exp(logits[j] / T)), computed in double. NAN when id >= V or the
 * temperature is not positive. */
FWM_API double fwm_logprob(const float *logits, uint32_t vocab_size, uint32_t id,
                           double temperature);

/* ---- sessions ----------------------------------------------------------------------------------- */
typedef struct fwm_session fwm_session;

/* A new session with zero state. FWM_ERR_OUT_OF_MEMORY. */
FWM_API fwm_status fwm_session_create(const fwm_model *model, fwm_session **out, fwm_error *err);
FWM_API void fwm_session_free(fwm_session *session);

/* Zero the state (h, c, F) and the position. */
FWM_API void fwm_session_reset(fwm_session *session);

/* Put the session in the model's start state: the state after reading the model's prime tokens
 * (fwm_model_info.prime_tokens; "<eos>" for the bundled models, as every catbAbI story begins)
 * from zero, and the position their count. The same bits as fwm_session_reset followed by
 * fwm_session_step_sequence over the prime tokens, at the cost of a copy. A session meant to read
 * text as the model was trained should be primed after fwm_session_create and fwm_session_reset;
 * fwm-serve's `open` and `reset` do it. */
FWM_API void fwm_session_prime(fwm_session *session);

/* A new session with a copy of `parent`'s state; the two then evolve independently. */
FWM_API fwm_status fwm_session_fork(const fwm_session *parent, fwm_session **out, fwm_error *err);

FWM_API const fwm_model *fwm_session_model(const fwm_session *session);

/* Number of tokens stepped since creation or the last reset. */
FWM_API uint64_t fwm_session_position(const fwm_session *session);

/* Step one token. `logits` receives V floats (the next-word scores), or may be NULL: then the read
 * and output (which change no state) are skipped. FWM_ERR_TOKEN_OUT_OF_RANGE leaves the state
 * untouched.
 *
 * Positions that predict nothing: every step of the fwm, lstm, mnm and gfw architectures (and of an
 * stm model in word mode) predicts the next token. An stm model in sentence mode reads a sentence at a
 * time and predicts only at a question's end (the answer); at every other token its step fills the
 * logits row with quiet NaNs (so `isnan(row[0])` tells such a row apart, in this and the sequence
 * and batch steps alike) and fwm_session_has_prediction is false until the next step. */
FWM_API fwm_status fwm_session_step(fwm_session *session, uint32_t token, float *logits, fwm_error *err);

/* Step `count` tokens in order. `logits` receives count*V floats (row i after token i), or NULL.
 * All token ids are checked before any is stepped: on error the state is untouched. Bit-identical
 * to calling fwm_session_step for each token. */
FWM_API fwm_status fwm_session_step_sequence(fwm_session *session, const uint32_t *tokens, size_t count,
                                             float *logits, fwm_error *err);

/* Step `count` distinct sessions of one model, one token each (tokens[i] for sessions[i]), in one
 * call. `logits` receives count*V floats (row i for sessions[i]), or NULL. Results are
 * bit-identical to stepping each session alone. Everything is checked before anything is stepped:
 * FWM_ERR_INVALID_ARGUMENT (NULL or repeated session), FWM_ERR_MODEL_MISMATCH,
 * FWM_ERR_TOKEN_OUT_OF_RANGE leave every session untouched. */
FWM_API fwm_status fwm_batch_step(fwm_session *const *sessions, const uint32_t *tokens, size_t count,
                                  float *logits, fwm_error *err);

/* The next-token scores (V floats into `logits`) that the session's current state gives, without
 * changing the session: what the last fwm_session_step would have written had it been asked for
 * logits. An lstm session's are those bits exactly; an fwm session's are the step's up to float
 * rounding (the same bits when the state came from steps, fork or prime; after an import the pending
 * write was applied by the export, so the reads run over F in another order). Under read policy
 * "token" an fwm session reads the memory only when its last token was the trigger; a session
 * that has read nothing since a reset, or was imported, counts as not having read it. A session
 * that has read nothing (reset, not primed) has a state too, and gets its scores. For a primed
 * session this is fwm_model_start_logits. FWM_ERR_INVALID_ARGUMENT (NULL session or logits),
 * FWM_ERR_UNSUPPORTED for the other architectures (mnm, gfw, stm: the message names it),
 * FWM_ERR_OUT_OF_MEMORY (scratch for large models). */
FWM_API fwm_status fwm_session_predict(const fwm_session *session, float *logits, fwm_error *err);

/* Whether the session's last step predicted the next token (its logits are scores, not the NaN row
 * of a position that predicts nothing): always true for the fwm, lstm, mnm and gfw architectures and
 * for an stm model in word mode, whatever the session has read; for an stm model in sentence mode true
 * only from a question's end to the next token (a new or reset session: false). Follows the
 * state through fork, prime, export and import. false for NULL. */
FWM_API bool fwm_session_has_prediction(const fwm_session *session);

/* An stm model in sentence mode takes the token read after a question's end as its answer and
 * ignores it (docs/MODEL.md, "The STM"). When no answer will follow (a question asked without
 * feeding its answer, as fwm-serve's `ask` without `commit`), this closes that answer slot so that
 * the next token starts a new sentence; the position is unchanged and nothing is predicted after it
 * (fwm_session_has_prediction becomes false). Returns whether a slot was open; false, changing
 * nothing, for every other session (other architectures, word mode, no open slot, NULL). */
FWM_API bool fwm_session_skip_answer(fwm_session *session);

/* ---- predictions -------------------------------------------------------------------------------- */
typedef struct fwm_prediction {
    uint32_t token;    /* token id */
    float probability; /* softmax probability over all V logits */
} fwm_prediction;

/* The k most probable tokens of one row of `vocab_size` logits, most probable first (ties: lower id
 * first). Writes min(k, vocab_size) entries and returns that number. Thread-safe. */
FWM_API size_t fwm_top_k(const float *logits, uint32_t vocab_size, size_t k, fwm_prediction *out);

/* ---- session state blobs ------------------------------------------------------------------------
 * A versioned, checksummed snapshot of a session (position, h, c, F) tied to its model's
 * fingerprint. Its size is fwm_model_info.state_blob_bytes. */

/* Write the blob into `buffer` (capacity bytes); *written receives its size.
 * FWM_ERR_BUFFER_TOO_SMALL (with *written set to the size needed). */
FWM_API fwm_status fwm_session_export(const fwm_session *session, void *buffer, size_t capacity,
                                      size_t *written, fwm_error *err);

/* Replace `session`'s state with a blob's. Refuses, leaving the session untouched:
 * FWM_ERR_STATE_MODEL_MISMATCH (another model's blob, or another architecture's: the message names
 * both), FWM_ERR_STATE_CORRUPT (bad magic, version, size or checksum). */
FWM_API fwm_status fwm_session_import(fwm_session *session, const void *blob, size_t size, fwm_error *err);

/* ---- inspection ----------------------------------------------------------------------------------
 * FWM models only: for other architectures both functions return FWM_ERR_UNSUPPORTED.
 * What the memory holds and what a read retrieves (the paper's figure 3), computed from the state
 * after the session's last step; nothing here changes the session or runs on the stepping path.
 * The caller provides every array (sizes from fwm_model_info; S == T whenever N_r > 1). */
typedef struct fwm_trace {
    float *k1;           /* [S] the last step's write key 1 (tanh) */
    float *k2;           /* [R] its write key 2 */
    float *v;            /* [T] the value it wrote */
    float beta;          /* its write strength */
    float *read_queries; /* [N_r * S] the query entering each read (q0 for the first) */
    float *read_keys;    /* [N_r * R] each read's key, tanh(e_i) */
    float *read_values;  /* [N_r * T] what each read retrieves (layer-normalised); the last one
                            is what the read-out uses */
    float *read_logits;  /* [N_r * V] or NULL: the next-word scores the model would give if its
                            read-out took read i's value (the read against the vocabulary) */
} fwm_trace;

/* Fill *trace for the session's last step (or its current h and F: a new, reset or restored session
 * traces what a step from there would write and read). The reads are computed for every step, also
 * where read policy "token" skips them; they match the step's own reads up to float rounding.
 * FWM_ERR_INVALID_ARGUMENT, FWM_ERR_OUT_OF_MEMORY (one S*R*T scratch). */
FWM_API fwm_status fwm_session_trace(const fwm_session *session, fwm_trace *trace, fwm_error *err);

/* The fast weights as the model means them (the last write applied): S*R*T floats, index
 * (i*R + j)*T + t, into `out` (`capacity` floats). FWM_ERR_BUFFER_TOO_SMALL. */
FWM_API fwm_status fwm_session_memory(const fwm_session *session, float *out, size_t capacity, fwm_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FWM_FWM_H */
