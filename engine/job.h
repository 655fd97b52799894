/* The job a run belongs to: the scheduler or launcher that started it, its
 * id and node list as the scheduler gives them, and where each rank runs
 * (host, node, local index, GPU), gathered over the communicator rather
 * than guessed from the environment (docs/report-schema.md, "env.job").
 */
#ifndef GT_JOB_H
#define GT_JOB_H

#include <stddef.h>

#include "engine/comm.h"
#include "engine/env.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_JOB_HOST 64

/* One rank of the job. */
typedef struct gt_job_rank {
    char host[GT_JOB_HOST];  /* gt_env_hostname */
    int node;                /* index into the job's nodes (order of first appearance) */
    int local_index;         /* this rank's index among the ranks of its node (by rank) */
    int launcher_local_rank; /* what the launcher said (gt_env_local_rank), -1 none */
    gt_gpu_identity gpu;     /* index -1: no GPU */
} gt_job_rank;

typedef struct gt_job {
    /* From the environment (gt_job_detect). */
    char scheduler[16];      /* "slurm", "mpirun-openmpi", "mpirun-mpich", "none" */
    char launcher[24];       /* "srun", "mpirun-openmpi", "mpirun-mpich", "none" */
    char job_id[64];         /* SLURM_JOB_ID (with SLURM_STEP_ID: "123.0"), PMIX_NAMESPACE; "" */
    char node_list[256];     /* SLURM_JOB_NODELIST as given ("node[1-2]"); "" */
    char tasks_per_node[64]; /* SLURM_TASKS_PER_NODE ("2(x2)"), OMPI_COMM_WORLD_LOCAL_SIZE; "" */
    /* From the communicator (gt_job_gather). */
    int ranks;
    int n_nodes;
    int ranks_per_node;      /* -1 when nodes hold different counts */
    char layout[64];         /* "2x1": nodes x ranks per node; uneven "2x(2+1)" */
    char (*nodes)[GT_JOB_HOST]; /* n_nodes host names, owned */
    gt_job_rank *rank;       /* ranks entries, owned */
} gt_job;

/* Fills the environment's part of *job (the rest zero). Never fails. */
void gt_job_detect(gt_job *job);

/* Collective over comm: gt_job_detect, then every rank's host, local index
 * and GPU (gt_env_gpu_identity of its own GPU) gathered to every rank.
 * GT_ERR_OOM, or the communicator's error. Free with gt_job_free. */
gt_status gt_job_gather(gt_comm *comm, gt_job *job);
void gt_job_free(gt_job *job);

/* The layout of ranks [0, n) of the job (the sub-communicator `gauntlet run`
 * gives a topology of n ranks): "NxM", or "Nx(a+b+...)" when the nodes hold
 * different counts (in node order). */
void gt_job_layout(const gt_job *job, int n, char *buf, size_t len);

/* Collective over comm: for each rank r of comm, node_of[r] (index of its
 * host in order of first appearance) and local_of[r] (its index among its
 * host's ranks); *n_nodes. Arrays of gt_comm_size(comm) entries. */
gt_status gt_comm_nodes(gt_comm *comm, int *node_of, int *local_of, int *n_nodes);

#ifdef __cplusplus
}
#endif
#endif
