/* distributed.c - the processes of a training run: MPI when built with it (FWM_HAVE_MPI), else one
 * process (see distributed.h).
 *
 * A program not started by an MPI launcher does not initialise MPI: it is one process, exactly as
 * in a build without MPI.
 * Exchanges go in pieces of at most 1 GiB (MPI counts are ints). The gathers use MPI_BYTE and
 * in-place Allgatherv/Gatherv: the receiving side adds nothing up, so the order of any sum made
 * from the parts afterwards is the caller's, the same whatever the number of ranks.
 */
#include "distributed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if FWM_HAVE_MPI
#include <mpi.h>

int fwm__dist_available(void)
{
    return 1;
}

/* Started by a launcher (mpirun, mpiexec, srun): Open MPI, MPICH/Hydra and PMIx set these. */
static int launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

void fwm__dist_init(int *argc, char ***argv, fwm__dist *d)
{
    memset(d, 0, sizeof *d);
    d->size = 1;
    d->local_size = 1;
    if (!launched_by_mpi()) /* a plain run never starts MPI at all */
        return;
    MPI_Init(argc, argv);
    d->active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &d->local_size);
    MPI_Comm_free(&local);
}

void fwm__dist_finalize(fwm__dist *d)
{
    if (d->active)
        MPI_Finalize();
    d->active = 0;
}

void fwm__dist_abort(const fwm__dist *d, int code)
{
    fflush(stdout);
    fflush(stderr);
    if (d->active && d->size > 1)
        MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

int fwm__dist_any(const fwm__dist *d, int flag)
{
    if (d->size <= 1)
        return flag != 0;
    int in = flag != 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out;
}

#define PIECE ((size_t)1 << 30)

void fwm__dist_bcast(const fwm__dist *d, void *buf, size_t bytes)
{
    if (d->size <= 1)
        return;
    for (size_t done = 0; done < bytes; done += PIECE) {
        size_t n = bytes - done < PIECE ? bytes - done : PIECE;
        MPI_Bcast((char *)buf + done, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
}

/* Counts and offsets as ints, or abort naming the limit (2 GiB per exchange). */
static void to_ints(const fwm__dist *d, const size_t *offset, const size_t *count, int *ioff,
                    int *icount)
{
    for (int r = 0; r < d->size; r++) {
        if (offset[r] + count[r] > 0x7fffffffu) {
            fprintf(stderr, "error: an exchange between ranks needs %zu bytes; the limit is 2 GiB "
                            "(use fewer lanes per group or a smaller model)\n",
                    offset[r] + count[r]);
            fwm__dist_abort(d, 1);
        }
        ioff[r] = (int)offset[r];
        icount[r] = (int)count[r];
    }
}

static void gather(const fwm__dist *d, void *buf, const size_t *offset, const size_t *count,
                   int all)
{
    if (d->size <= 1)
        return;
    int *ioff = malloc(2 * (size_t)d->size * sizeof *ioff);
    if (!ioff) {
        fprintf(stderr, "error: out of memory\n");
        fwm__dist_abort(d, 1);
        return;
    }
    int *icount = ioff + d->size;
    to_ints(d, offset, count, ioff, icount);
    if (all)
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, icount, ioff, MPI_BYTE,
                       MPI_COMM_WORLD);
    else if (d->rank == 0)
        MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, icount, ioff, MPI_BYTE, 0,
                    MPI_COMM_WORLD);
    else
        MPI_Gatherv((char *)buf + offset[d->rank], icount[d->rank], MPI_BYTE, NULL, NULL, NULL,
                    MPI_BYTE, 0, MPI_COMM_WORLD);
    free(ioff);
}

void fwm__dist_allgather(const fwm__dist *d, void *buf, const size_t *offset, const size_t *count)
{
    gather(d, buf, offset, count, 1);
}

void fwm__dist_gather(const fwm__dist *d, void *buf, const size_t *offset, const size_t *count)
{
    gather(d, buf, offset, count, 0);
}

#else /* one process */

int fwm__dist_available(void)
{
    return 0;
}

void fwm__dist_init(int *argc, char ***argv, fwm__dist *d)
{
    (void)argc;
    (void)argv;
    memset(d, 0, sizeof *d);
    d->size = 1;
    d->local_size = 1;
}

void fwm__dist_finalize(fwm__dist *d)
{
    (void)d;
}

void fwm__dist_abort(const fwm__dist *d, int code)
{
    (void)d;
    fflush(stdout);
    fflush(stderr);
    exit(code);
}

int fwm__dist_any(const fwm__dist *d, int flag)
{
    (void)d;
    return flag != 0;
}

void fwm__dist_bcast(const fwm__dist *d, void *buf, size_t bytes)
{
    (void)d;
    (void)buf;
    (void)bytes;
}

void fwm__dist_allgather(const fwm__dist *d, void *buf, const size_t *offset, const size_t *count)
{
    (void)d;
    (void)buf;
    (void)offset;
    (void)count;
}

void fwm__dist_gather(const fwm__dist *d, void *buf, const size_t *offset, const size_t *count)
{
    (void)d;
    (void)buf;
    (void)offset;
    (void)count;
}

#endif
