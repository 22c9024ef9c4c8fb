/* real_template.h - precision macros for the trainer's code that exists in two precisions.
 *
 * The forward and backward passes are written once over `real` and instantiated twice: float
 * (with single-precision BLAS) for training and evaluation, double for the gradient check. A file
 * that instantiates the template defines FWM_REAL_DOUBLE to 0 or 1 and includes this header; it
 * may be included again with the other value (it undefines what it defined).
 * TM(name) appends the precision suffix: TM(fwm__tm) is fwm__tm_f32 or fwm__tm_f64. It names only
 * what both precisions' declarations share in one translation unit (the *_model_decl.h types and
 * the functions with external linkage) and the types built on those; a static function lives in
 * one precision's file (fwm/fwm_f32.c, lstm/lstm_f64.c, ...) and keeps its plain name.
 */
#undef real
#undef TM
#undef TM_CAT_
#undef TM_CAT
#undef R_GEMM
#undef R_EXP
#undef R_LOG
#undef R_TANH
#undef R_SQRT

#define TM_CAT_(a, b) a##b
#define TM_CAT(a, b) TM_CAT_(a, b)

#if FWM_REAL_DOUBLE
#define real double
#define TM(name) TM_CAT(name, _f64)
#define R_GEMM cblas_dgemm
#define R_EXP exp
#define R_LOG log
#define R_TANH tanh
#define R_SQRT sqrt
#else
#define real float
#define TM(name) TM_CAT(name, _f32)
#define R_GEMM cblas_sgemm
#define R_EXP expf
#define R_LOG logf
#define R_TANH tanhf
#define R_SQRT sqrtf
#endif
