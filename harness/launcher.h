/* The MPI launcher that gauntlet relaunches itself with when one process is
 * asked for more ranks (`gauntlet run --topologies 1,2`, `train --topologies`):
 * the one this build found at configure time beside its MPI library
 * (gt_config.h: GT_MPIEXEC, GT_MPIEXEC_FAMILY; CMake's GT_MPI), with the flags
 * of its family. Open MPI's mpirun and MPICH's Hydra (mpiexec.mpich, also
 * Intel MPI's and MVAPICH's mpiexec.hydra) take different flags and reject
 * each other's (docs/clusters.md, "MPICH"). */
#ifndef GT_LAUNCHER_H
#define GT_LAUNCHER_H

typedef enum {
    GT_LAUNCHER_OPENMPI, /* Open MPI's mpirun / mpiexec */
    GT_LAUNCHER_HYDRA,   /* MPICH's Hydra: mpiexec.mpich, mpiexec.hydra */
    GT_LAUNCHER_OTHER,   /* a launcher of no known family: no flags added */
    GT_LAUNCHER_COUNT
} gt_launcher_family;

/* "openmpi", "hydra", "other". */
const char *gt_launcher_family_name(gt_launcher_family f);

/* This build's launcher family (from GT_MPIEXEC_FAMILY; GT_LAUNCHER_OTHER in a
 * build without one). */
gt_launcher_family gt_launcher_family_of_build(void);

/* The launcher's path, written into path (size n): the configured GT_MPIEXEC
 * when it is executable, else the first executable of the same name on PATH
 * (a build copied to another machine), else for Open MPI "mpirun" on PATH.
 * Returns 1 when one was found, 0 when none (path is then ""). */
int gt_launcher_path(char *path, int n);

/* The launcher's file name for messages ("mpirun", "mpiexec.mpich"); "mpirun"
 * when gt_launcher_path finds none. The string is static. */
const char *gt_launcher_name(void);

/* The argument vector that starts `self` (an absolute path) with the
 * arguments rest[] (NULL-terminated) on n ranks under the launcher at `path`
 * of `family`, on a machine with ncpu online cores, as root when as_root:
 *   openmpi: path -np N [--oversubscribe past the cores] [--allow-run-as-root] self rest...
 *   hydra:   path -n N self rest...  (Hydra oversubscribes and runs as root unasked)
 *   other:   path -n N self rest...
 * Fills args[0..count) and a NULL after them, borrowing every string except
 * the rank count, which it writes into np (at least 16 bytes). Returns the
 * count, or -1 when more than max - 1 entries would be needed. */
int gt_launcher_argv(gt_launcher_family family, const char *path, int n, long ncpu, int as_root,
                     const char *self, char *const rest[], char np[16], char **args, int max);

/* The environment the ranks should get for n ranks on ncpu cores, as
 * "NAME=value" strings (static, NULL-terminated): Open MPI's
 * OMPI_MCA_mpi_yield_when_idle=1 past the cores (ranks waiting in a call yield
 * their core instead of spinning: 4 ranks on 2 cores beside a busy core took
 * the collectives suite 185 s instead of 31 s). None for Hydra: MPICH 4.0.2's
 * ch4 device has no setting that makes a waiting rank yield
 * (MPIR_CVAR_POLLS_BEFORE_YIELD=1 changed nothing, measured; the progress
 * throttle CVARs came later); gauntlet's own waits yield (engine/comm.c). */
const char *const *gt_launcher_env(gt_launcher_family family, int n, long ncpu);

/* What a person launching by hand as root must add, for messages: " (as root
 * add --allow-run-as-root)" for Open MPI, "" for Hydra, which needs nothing. */
const char *gt_launcher_root_hint(void);

/* 1 when this build has MPI and gt_launcher_path finds its launcher. */
int gt_launcher_available(void);

/* Runs this gauntlet again under the build's launcher on n ranks with the
 * same arguments (argv_full: the process's argv), setting gt_launcher_env's
 * variables where the user has not. Returns only when the launcher could not
 * be started (none found, or exec failed). */
void gt_launcher_relaunch(int n, char **argv_full);

#endif
