/* fast_math.h - vectorised exp, sigmoid and tanh over float arrays for the trainer's float path
 * (the LSTM gates and the memory's key/value activations), with libm for the tails. exp is the
 * Cephes single-precision polynomial (within 2 ulp on the clamped range); sigmoid and tanh are
 * built on it (absolute error below 1e-7; fwm__tanh_array_precise also to a small relative error
 * for small arguments). The double path of the gradient check uses libm.
 * GCC/Clang vector extensions, 8 floats at a time. */
#ifndef FWM_TRAIN_FAST_MATH_H
#define FWM_TRAIN_FAST_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef float fwm__v8f __attribute__((vector_size(32)));
typedef int32_t fwm__v8i __attribute__((vector_size(32)));

static inline fwm__v8f fwm__v8_select(fwm__v8i mask, fwm__v8f a, fwm__v8f b)
{
    return (fwm__v8f)(((fwm__v8i)a & mask) | ((fwm__v8i)b & ~mask));
}

static inline fwm__v8f fwm__v8_exp(fwm__v8f x)
{
    const fwm__v8f hi = (fwm__v8f){0} + 88.0f, lo = (fwm__v8f){0} - 87.3365447504f;
    x = fwm__v8_select(x > hi, hi, x);
    x = fwm__v8_select(x < lo, lo, x);
    fwm__v8f fx = x * 1.44269504088896341f + 0.5f;
    fwm__v8i n = __builtin_convertvector(fx, fwm__v8i); /* truncation */
    fwm__v8f t = __builtin_convertvector(n, fwm__v8f);
    fwm__v8i above = t > fx;                            /* floor for negatives */
    n = n + above;                                      /* above is -1 where true */
    fx = __builtin_convertvector(n, fwm__v8f);
    x = x - fx * 0.693359375f;
    x = x + fx * 2.12194440e-4f;
    fwm__v8f z = x * x;
    fwm__v8f y = (fwm__v8f){0} + 1.9875691500e-4f;
    y = y * x + 1.3981999507e-3f;
    y = y * x + 8.3334519073e-3f;
    y = y * x + 4.1665795894e-2f;
    y = y * x + 1.6666665459e-1f;
    y = y * x + 5.0000001201e-1f;
    y = y * z + x + 1.0f;
    fwm__v8i bits = (n + 127) << 23;
    return y * (fwm__v8f)bits;
}

/* a[i] = sigmoid(a[i] + bias) */
static inline void fwm__sigmoid_array(float *a, size_t n, float bias)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        fwm__v8f v;
        memcpy(&v, a + i, sizeof v);
        v = 1.0f / (1.0f + fwm__v8_exp(-(v + bias)));
        memcpy(a + i, &v, sizeof v);
    }
    for (; i < n; i++)
        a[i] = 1.0f / (1.0f + expf(-(a[i] + bias)));
}

/* out[i] = tanh(in[i]) (out may be in) */
static inline void fwm__tanh_array(float *out, const float *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        fwm__v8f v;
        memcpy(&v, in + i, sizeof v);
        fwm__v8i negative = v < 0.0f;
        fwm__v8f a = fwm__v8_select(negative, -v, v);
        fwm__v8f e = fwm__v8_exp(-2.0f * a);
        fwm__v8f t = (1.0f - e) / (1.0f + e);
        /* below 2^-12, tanh(a) = a to float precision; the formula would lose digits there */
        t = fwm__v8_select(a < 2.44140625e-4f, a, t);
        v = fwm__v8_select(negative, -t, t);
        memcpy(out + i, &v, sizeof v);
    }
    for (; i < n; i++)
        out[i] = tanhf(in[i]);
}

/* out[i] = tanh(in[i]) (out may be in) to a small relative error for every argument: the Cephes
 * single-precision tanhf (an odd polynomial below |x| = 0.625, 1 - 2/(exp(2|x|) + 1) above).
 * fwm__tanh_array's formula has an absolute error near 1e-7 but loses relative precision for small
 * arguments; the gfw model needs this one, because its layer norms scale small activations up to
 * unit size (and with them any relative error). */
static inline void fwm__tanh_array_precise(float *out, const float *in, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        fwm__v8f v;
        memcpy(&v, in + i, sizeof v);
        fwm__v8i negative = v < 0.0f;
        fwm__v8f a = fwm__v8_select(negative, -v, v);
        fwm__v8f z = v * v;
        fwm__v8f p = (fwm__v8f){0} - 5.70498872745e-3f;
        p = p * z + 2.06390887954e-2f;
        p = p * z - 5.37397155531e-2f;
        p = p * z + 1.33314422036e-1f;
        p = p * z - 3.33332819422e-1f;
        fwm__v8f small = p * z * v + v;
        fwm__v8f large = 1.0f - 2.0f / (fwm__v8_exp(a + a) + 1.0f);
        large = fwm__v8_select(negative, -large, large);
        v = fwm__v8_select(a < 0.625f, small, large);
        memcpy(out + i, &v, sizeof v);
    }
    for (; i < n; i++)
        out[i] = tanhf(in[i]);
}

#endif
