/* real_buffers_impl.h - zeroed, aligned buffers of `real`, template over `real` (see
 * real_template.h); included by shared_kernels_impl.h and tm_shell_impl.h. */

/* count zeroed reals, 64-byte aligned (at least one); sets *failed and returns NULL when out of
 * memory, so a model's create can allocate everything and check once */
static real *alloc_reals(size_t count, int *failed)
{
    size_t bytes = (count ? count : 1) * sizeof(real);
    bytes = (bytes + 63) / 64 * 64;
    real *p = aligned_alloc(64, bytes);
    if (!p)
        *failed = 1;
    else
        memset(p, 0, bytes);
    return p;
}
