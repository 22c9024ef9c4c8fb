/* arch_list.h - the registry of model architectures: the one list of the values
 * `general.architecture` may take, each with the C prefix its code uses in every layer.
 *
 * Registering an architecture is one line here, plus its folders: model_format/<arch>/ (keys,
 * tensors, schema, writer), runtime/<arch>/ (its ops table, named fwm__<prefix>_ops), and
 * train/<arch>/ with tests/reference/<arch>_reference.py (docs/ARCHITECTURE.md, "Architectures").
 * The order is the order of fwm_arch and of the names listed in messages; `fwm` stays first.
 * Internal to libfwm and its tools.
 */
#ifndef FWM_MODEL_FORMAT_ARCH_LIST_H
#define FWM_MODEL_FORMAT_ARCH_LIST_H

#include <stddef.h>

#include "fwm/fwm.h"
#include "gguf_reader.h"

/* X(ID, name, prefix) */
#define FWM_ARCH_LIST(X) \
    X(FWM, "fwm", fwm)   \
    X(LSTM, "lstm", lstm) \
    X(MNM, "mnm", mnm)    \
    X(GFW, "gfw", gfw)    \
    X(STM, "stm", stm)

typedef enum fwm_arch {
#define FWM_ARCH_ENUM_(id, name, prefix) FWM_ARCH_##id,
    FWM_ARCH_LIST(FWM_ARCH_ENUM_)
#undef FWM_ARCH_ENUM_
        FWM_ARCH_COUNT
} fwm_arch;

/* "fwm", "lstm", "mnm", "gfw", "stm"; NULL outside the list. */
const char *fwm__arch_name(fwm_arch arch);

/* The architecture a parsed container declares: general.architecture must be a string naming a
 * registered architecture. FWM_ERR_FORMAT for a missing or mistyped key, FWM_ERR_UNSUPPORTED for
 * an unknown name ("key 'general.architecture': unknown architecture \"ntm\" (known: fwm, lstm, mnm,
 * gfw, stm)"). */
fwm_status fwm__arch_of_file(const fwm_gguf_file *f, fwm_arch *out, fwm_error *err);

/* The same from a whole file in memory (parses the container). */
fwm_status fwm__arch_detect(const void *buf, size_t size, fwm_arch *out, fwm_error *err);

#endif
