/* arch_list.c - naming and recognising the registered architectures (arch_list.h). */
#include "arch_list.h"

#include <stdio.h>
#include <string.h>

#include "fwm_error.h"
#include "schema_common.h"

static const char *const arch_names[FWM_ARCH_COUNT] = {
#define FWM_ARCH_NAME_(id, name, prefix) name,
    FWM_ARCH_LIST(FWM_ARCH_NAME_)
#undef FWM_ARCH_NAME_
};

const char *fwm__arch_name(fwm_arch arch) {
    return (unsigned)arch < FWM_ARCH_COUNT ? arch_names[arch] : NULL;
}

fwm_status fwm__arch_of_file(const fwm_gguf_file *f, fwm_arch *out, fwm_error *err) {
    fwm_gguf_string s = {"", 0};
    fwm_status st = fwm__schema_get_string(f, "general.architecture", 1, &s, NULL, err);
    if (st) return st;
    for (int a = 0; a < FWM_ARCH_COUNT; a++) {
        if (s.length == strlen(arch_names[a]) && memcmp(s.data, arch_names[a], s.length) == 0) {
            *out = (fwm_arch)a;
            return FWM_OK;
        }
    }
    char known[160] = "";
    size_t used = 0;
    for (int a = 0; a < FWM_ARCH_COUNT && used < sizeof known; a++) {
        int n = snprintf(known + used, sizeof known - used, "%s%s", a ? ", " : "", arch_names[a]);
        if (n < 0) break;
        used += (size_t)n;
    }
    return fwm__error(err, FWM_ERR_UNSUPPORTED,
                      "key 'general.architecture': unknown architecture \"%.*s\" (known: %s)",
                      (int)(s.length < 64 ? s.length : 64), s.data, known);
}

fwm_status fwm__arch_detect(const void *buf, size_t size, fwm_arch *out, fwm_error *err) {
    fwm_gguf_file f;
    fwm_status st = fwm__gguf_parse(buf, size, &f, err);
    if (st) return st;
    st = fwm__arch_of_file(&f, out, err);
    fwm__gguf_release(&f);
    return st;
}
