/* fwm_error.c - the status table (fwm_status_str) and error-record helpers. */
#include "fwm_error.h"

#include <stdarg.h>
#include <stdio.h>

const char *fwm_status_str(fwm_status status) {
    switch (status) {
#define FWM_STATUS_CASE_(name, value, text) \
    case name:                              \
        return text;
        FWM_STATUS_LIST(FWM_STATUS_CASE_)
#undef FWM_STATUS_CASE_
    }
    return "unknown status";
}

fwm_status fwm__error(fwm_error *err, fwm_status status, const char *format, ...) {
    if (err) {
        err->status = status;
        va_list args;
        va_start(args, format);
        int n = vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
        if (n <= 0) snprintf(err->message, sizeof err->message, "%s", fwm_status_str(status));
    }
    return status;
}

void fwm__error_clear(fwm_error *err) {
    if (err) {
        err->status = FWM_OK;
        err->message[0] = '\0';
    }
}
