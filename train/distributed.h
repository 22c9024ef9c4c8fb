/* distributed.h - the processes of a data-parallel training run (MPI) as the trainer sees them.
 *
 * fwm-train started by `mpirun -np N` is N processes ("ranks"); each trains a fixed part of the
 * lanes and they exchange per-group gradients every step (trainer.c). This header is the only
 * place the trainer meets MPI: built without MPI (meson -Dmpi=disabled, or no MPI library), every
 * function works for a single process (rank 0 of 1) and nothing else changes.
 * Buffers are exchanged as raw bytes: every rank must run on the same kind of machine (byte order,
 * float format), as checkpoints already assume.
 * Not for: anything about what is exchanged (trainer.c, checkpoint.c decide that).
 */
#ifndef FWM_TRAIN_DISTRIBUTED_H
#define FWM_TRAIN_DISTRIBUTED_H

#include <stddef.h>

typedef struct fwm__dist {
    int rank;       /* 0..size-1; rank 0 writes files and prints progress */
    int size;       /* processes in the run; 1 without mpirun or without MPI */
    int local_size; /* processes of the run on this machine (shares its cores) */
    int active;     /* MPI was initialised (and must be finalised) */
} fwm__dist;

/* Whether this build can run under mpirun (built with MPI). */
int fwm__dist_available(void);

/* Join the run: MPI_Init when built with MPI, else a single process. Never fails: an MPI library
 * that cannot start aborts the program with its own message. */
void fwm__dist_init(int *argc, char ***argv, fwm__dist *dist);
/* Leave the run (MPI_Finalize). All ranks must call it. */
void fwm__dist_finalize(fwm__dist *dist);
/* End every rank of the run with `code` (MPI_Abort; exit(code) for a single process). Used when
 * one rank fails while others may be waiting in an exchange. */
void fwm__dist_abort(const fwm__dist *dist, int code);

/* Collective: nonzero on every rank when `flag` is nonzero on any rank. */
int fwm__dist_any(const fwm__dist *dist, int flag);
/* Collective: rank 0's `bytes` bytes of buf are copied to buf on every rank. */
void fwm__dist_bcast(const fwm__dist *dist, void *buf, size_t bytes);
/* Collective, in place: rank r has filled buf[offset[r] .. offset[r] + count[r]) (bytes; offset
 * and count have `size` entries, the same on every rank); afterwards every rank has every part. */
void fwm__dist_allgather(const fwm__dist *dist, void *buf, const size_t *offset,
                         const size_t *count);
/* Collective, in place: as fwm__dist_allgather but only rank 0 receives the parts. */
void fwm__dist_gather(const fwm__dist *dist, void *buf, const size_t *offset, const size_t *count);

#endif
