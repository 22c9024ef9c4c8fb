/* whole_file.h - a whole file into memory, for the trainer's readers of bAbI and of plain text. */
#ifndef FWM_TRAIN_WHOLE_FILE_H
#define FWM_TRAIN_WHOLE_FILE_H

#include <stddef.h>

#include "fwm/fwm.h"

/* The file at `path` into a new NUL-terminated buffer (free it); *length excludes the NUL.
 * FWM_ERR_IO ("cannot open PATH: reason", "cannot read PATH"), FWM_ERR_OUT_OF_MEMORY ("PATH: out
 * of memory"). */
fwm_status fwm__read_whole_file(const char *path, char **out, size_t *length, fwm_error *err);

#endif
