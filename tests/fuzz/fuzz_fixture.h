/* fuzz_fixture.h - the small valid model the state-import and tokenizer fuzz targets run against,
 * built in-process (fwm__model_write to a temporary file, loaded, file removed) so a fuzz binary
 * needs no files besides its corpus.
 *
 * Its hyperparameters, vocabulary and weights are fixed and mirrored exactly by make_corpus.py,
 * which computes the same fingerprint to write state-blob seeds this model accepts: change one,
 * change the other (the replay tests' --min-accepted notices a mismatch).
 */
#ifndef FWM_TESTS_FUZZ_FIXTURE_H
#define FWM_TESTS_FUZZ_FIXTURE_H

#include "fwm/fwm.h"

/* The fixture model, built on first use and kept for the life of the process (never freed: a
 * fuzz binary calls its target millions of times). Aborts with a message if it cannot be built,
 * since nothing can be fuzzed without it. Not thread-safe (fuzz targets run on one thread). */
const fwm_model *fuzz_fixture_model(void);

/* The LSTM baseline's fixture (architecture `lstm`): the same vocabulary, E = 5, H = 4, two residual
 * layers, weights by the same formula; built and kept the same way. Its session blobs are version 2
 * with L = 2 and H = 4 (make_corpus.py writes such seeds). */
const fwm_model *fuzz_fixture_lstm_model(void);

/* The MNM baseline's fixture (architecture `mnm`): the same vocabulary, E = 5, H = 2, one head, keys
 * of 2, values of 1, one memory layer (of 1 x 2), output 3, weights and initial memory by the same
 * formula. Its blobs are version 2 with dims H 2, d_k 2, d_v 1, D 2, one layer. */
const fwm_model *fuzz_fixture_mnm_model(void);

/* The Gated Fast Weights fixture (architecture `gfw`): the same vocabulary, E = 5, a fast net of
 * m = 2, a slow net of N = 2 with a transition layer of P = 3, epsilon 2^-16, weights by the same
 * formula. Its blobs are version 2 with dims m 2, N 2, E 5 and 2 + 2 + 2 (2 + 5 + 1) + 2 (2 + 1)
 * = 26 floats. */
const fwm_model *fuzz_fixture_gfw_model(void);

/* The STM's fixture (architecture `stm`, sentence mode): the same vocabulary ("." and "?" its end
 * words, <eos> resetting), E = 5, P = 3, d = 2, two queries, answer MLPs of 2, both layer-norm
 * epsilons 2^-16, weights and initial memories by the same formula. Its blobs are version 2 with dims
 * d 2, n_q 2, mode 0, P 3: 12 floats, then 3 word ids, the length and the slot. */
const fwm_model *fuzz_fixture_stm_model(void);

#endif
