/* fwm_convert.c - fwm-convert --weights bf16 IN OUT: write the BF16 twin of an fwm or lstm model
 * (model_format/convert_bf16.h): every matrix the runtime multiplies stored as BF16 (or only those
 * named with --only), fwm.matmul_type = "bf16", its own checksum and fingerprint. The input is
 * loaded (and so checked, checksum and fingerprint included) first, and the output is loaded back
 * before it is written, atomically: a refused conversion leaves OUT as it was. Exit status 0 done,
 * 1 refused (the reason on stderr), 2 usage error. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16_kernels.h"
#include "convert_bf16.h"
#include "fwm/fwm.h"
#include "fwm_alloc.h"
#include "read_file.h"
#include "writer_common.h"

#define MAX_ONLY 64

static void usage(FILE *out) {
    fprintf(out,
            "usage: fwm-convert --weights bf16 [--only TENSOR]... IN.gguf OUT.gguf\n"
            "\n"
            "Write OUT, the BF16 model of the fwm or lstm model IN: every matrix the step multiplies\n"
            "(all but token_embd.weight; with --only, just the named ones) stored as BF16 (GGML type\n"
            "30), rounded to nearest even, and the key fwm.matmul_type = \"bf16\", so the runtime\n"
            "multiplies them in BF16 (AVX512-BF16 where the CPU has it). Biases and the embedding\n"
            "stay F32. OUT has its own checksum and fingerprint (docs/FORMAT.md, section 4).\n"
            "\n"
            "Exit status: 0 written, 1 refused (reason on stderr; OUT untouched), 2 usage error.\n");
}

int main(int argc, char **argv) {
    const char *weights = NULL, *paths[2] = {NULL, NULL};
    const char *only[MAX_ONLY];
    size_t n_only = 0, n_paths = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--weights") == 0 && i + 1 < argc) {
            weights = argv[++i];
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            if (n_only == MAX_ONLY) {
                fprintf(stderr, "fwm-convert: at most %d --only tensors\n", MAX_ONLY);
                return 2;
            }
            only[n_only++] = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "fwm-convert: unknown option or missing value: '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (n_paths < 2) {
            paths[n_paths++] = argv[i];
        } else {
            fprintf(stderr, "fwm-convert: too many arguments: '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!weights || n_paths != 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(weights, "bf16") != 0) {
        fprintf(stderr, "fwm-convert: --weights '%s': only bf16 is supported\n", weights);
        return 2;
    }
    uint8_t *in = NULL;
    size_t size = 0;
    if (!fwm__tool_read_file("fwm-convert", paths[0], &in, &size)) return 1;
    fwm_error err;
    fwm_model *model = NULL;
    fwm_status st = fwm_model_load_from_buffer(in, size, NULL, &model, &err);
    if (st != FWM_OK) {
        fprintf(stderr, "fwm-convert: %s: not a model fwm loads (%s): %s\n", paths[0],
                fwm_status_str(st), err.message);
        free(in);
        return 1;
    }
    fwm_model_free(model);
    fwm_bf16_convert_options options = {n_only ? only : NULL, n_only};
    uint8_t *out = NULL;
    size_t out_size = 0, converted = 0;
    st = fwm__convert_bf16(in, size, &options, &out, &out_size, &converted, &err);
    free(in);
    if (st != FWM_OK) {
        fprintf(stderr, "fwm-convert: %s: %s (%s)\n", paths[0], err.message, fwm_status_str(st));
        return 1;
    }
    /* the output must load, checksum and fingerprint verified, before it is written */
    st = fwm_model_load_from_buffer(out, out_size, NULL, &model, &err);
    if (st != FWM_OK) {
        fprintf(stderr, "fwm-convert: the converted model would not load (%s): %s\n",
                fwm_status_str(st), err.message);
        fwm__free(out);
        return 1;
    }
    fwm_model_info info;
    fwm_model_get_info(model, &info);
    uint64_t fingerprint = info.fingerprint;
    fwm_model_free(model);
    st = fwm__write_atomically(paths[1], out, out_size, &err);
    fwm__free(out);
    if (st != FWM_OK) {
        fprintf(stderr, "fwm-convert: %s (%s)\n", err.message, fwm_status_str(st));
        return 1;
    }
    printf("wrote %s: %s model, %zu matri%s stored as BF16, fwm.matmul_type \"bf16\", fingerprint "
           "0x%016" PRIx64 "; this machine multiplies them with the %s kernel\n",
           paths[1], info.architecture, converted, converted == 1 ? "x" : "ces", fingerprint,
           fwm__bf16_kernel_name());
    return 0;
}
