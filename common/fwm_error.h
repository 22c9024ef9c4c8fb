/* fwm_error.h - filling the caller's optional fwm_error record. Internal. */
#ifndef FWM_COMMON_ERROR_H
#define FWM_COMMON_ERROR_H

#include "fwm/fwm.h"

/* Format the message into *err (if err is non-NULL), set err->status, and return `status`, so a
 * failure is one line: `return fwm__error(err, FWM_ERR_FORMAT, "key '%s': ...", name);` */
fwm_status fwm__error(fwm_error *err, fwm_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Mark *err (if non-NULL) as success: status FWM_OK, empty message. */
void fwm__error_clear(fwm_error *err);

#endif
