/* The job: scheduler, id, node list, and where each rank runs (job.h). */
#include "engine/job.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

void gt_job_detect(gt_job *job) {
    memset(job, 0, sizeof *job);
    const char *slurm_job = env_or("SLURM_JOB_ID", env_or("SLURM_JOBID", NULL));
    /* Open MPI's mpirun starts ranks through its daemons, which leave
     * OMPI_MCA_orte_* (4.x) or PRTE_* (5.x) behind, also inside a Slurm
     * allocation (where the daemons' own srun step sets SLURM_PROCID too);
     * srun starting the ranks itself sets SLURM_PROCID without them;
     * Open MPI sets OMPI_COMM_WORLD_* under both. MPICH's Hydra
     * (mpiexec.mpich) sets PMI_RANK and its own MPI_LOCALNRANKS, which
     * srun's PMI-2 (srun --mpi=pmi2, PMI_RANK too) does not; inside an
     * allocation Hydra starts its proxies with srun, one per node, so a rank
     * sees the proxy's SLURM_PROCID (the node's index, not its rank) */
    const char *launcher =
        getenv("OMPI_MCA_orte_hnp_uri") || getenv("OMPI_MCA_orte_launch") ||
                getenv("PRTE_LAUNCHED")
            ? "mpirun-openmpi"
        : getenv("PMI_RANK") && getenv("MPI_LOCALNRANKS") ? "mpirun-mpich"
        : slurm_job && getenv("SLURM_PROCID")             ? "srun"
        : getenv("OMPI_COMM_WORLD_SIZE")                  ? "mpirun-openmpi"
        : getenv("PMI_RANK")                              ? "mpirun-mpich"
                                                          : "none";
    snprintf(job->launcher, sizeof job->launcher, "%s", launcher);
    snprintf(job->scheduler, sizeof job->scheduler, "%s",
             slurm_job ? "slurm" : strcmp(launcher, "srun") == 0 ? "none" : launcher);
    if (slurm_job) {
        const char *step = env_or("SLURM_STEP_ID", env_or("SLURM_STEPID", NULL));
        if (step && strcmp(launcher, "srun") == 0)
            snprintf(job->job_id, sizeof job->job_id, "%s.%s", slurm_job, step);
        else
            snprintf(job->job_id, sizeof job->job_id, "%s", slurm_job);
        snprintf(job->node_list, sizeof job->node_list, "%s",
                 env_or("SLURM_JOB_NODELIST", env_or("SLURM_NODELIST", "")));
        snprintf(job->tasks_per_node, sizeof job->tasks_per_node, "%s",
                 env_or("SLURM_TASKS_PER_NODE", env_or("SLURM_NTASKS_PER_NODE", "")));
    } else {
        snprintf(job->job_id, sizeof job->job_id, "%s", env_or("PMIX_NAMESPACE", ""));
    }
    /* mpirun's (Hydra's) count of this node's ranks wins over the allocation's */
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!local || !*local) local = getenv("MPI_LOCALNRANKS");
    if (local && *local) snprintf(job->tasks_per_node, sizeof job->tasks_per_node, "%s", local);
}

/* What each rank sends: fixed size, a multiple of 4 bytes (sent as int32). */
typedef struct wire {
    char host[GT_JOB_HOST];
    int32_t launcher_local_rank, gpu_index;
    char gpu_name[96], gpu_uuid[48], gpu_pci[32];
    char pad[8];
} wire;
_Static_assert(sizeof(wire) % 4 == 0, "wire is sent as int32");

/* host -> node index in order of first appearance; local index by rank */
static int assign_nodes(const char (*hosts)[GT_JOB_HOST], int n, int *node_of, int *local_of,
                        int *count) {
    int n_nodes = 0;
    for (int r = 0; r < n; r++) {
        int k = 0;
        while (k < r && strcmp(hosts[k], hosts[r]) != 0) k++;
        node_of[r] = k < r ? node_of[k] : n_nodes++;
        local_of[r] = count[node_of[r]]++;
    }
    return n_nodes;
}

gt_status gt_comm_nodes(gt_comm *comm, int *node_of, int *local_of, int *n_nodes) {
    int n = gt_comm_size(comm);
    char mine[GT_JOB_HOST] = {0};
    gt_env_hostname(mine, sizeof mine);
    char (*hosts)[GT_JOB_HOST] = calloc((size_t)n, GT_JOB_HOST);
    int *count = calloc((size_t)n, sizeof *count);
    gt_status s = hosts && count ? GT_OK : GT_ERR(GT_ERR_OOM, "host names of %d ranks", n);
    if (s == GT_OK)
        s = gt_comm_allgather(comm, mine, hosts, GT_JOB_HOST / 4, GT_DTYPE_INT32, NULL);
    if (s == GT_OK) {
        for (int r = 0; r < n; r++) hosts[r][GT_JOB_HOST - 1] = '\0';
        *n_nodes = assign_nodes((const char (*)[GT_JOB_HOST])hosts, n, node_of, local_of, count);
    }
    free(hosts);
    free(count);
    return s;
}

gt_status gt_job_gather(gt_comm *comm, gt_job *job) {
    gt_job_detect(job);
    int n = gt_comm_size(comm);
    wire mine;
    memset(&mine, 0, sizeof mine);
    gt_env_hostname(mine.host, sizeof mine.host);
    mine.launcher_local_rank = gt_env_local_rank();
    gt_gpu_identity g;
    gt_env_gpu_identity(-1, &g);
    mine.gpu_index = g.index;
    snprintf(mine.gpu_name, sizeof mine.gpu_name, "%s", g.name);
    snprintf(mine.gpu_uuid, sizeof mine.gpu_uuid, "%s", g.uuid);
    snprintf(mine.gpu_pci, sizeof mine.gpu_pci, "%s", g.pci_bus_id);
    wire *all = calloc((size_t)n, sizeof *all);
    char (*hosts)[GT_JOB_HOST] = calloc((size_t)n, GT_JOB_HOST);
    int *node_of = calloc((size_t)n, sizeof *node_of), *local_of = calloc((size_t)n, sizeof(int));
    int *count = calloc((size_t)n, sizeof *count);
    job->rank = calloc((size_t)n, sizeof *job->rank);
    gt_status s = all && hosts && node_of && local_of && count && job->rank
                      ? GT_OK
                      : GT_ERR(GT_ERR_OOM, "the job's table of %d ranks", n);
    if (s == GT_OK)
        s = gt_comm_allgather(comm, &mine, all, sizeof mine / 4, GT_DTYPE_INT32, NULL);
    if (s == GT_OK) {
        for (int r = 0; r < n; r++) {
            all[r].host[GT_JOB_HOST - 1] = all[r].gpu_name[95] = all[r].gpu_uuid[47] =
                all[r].gpu_pci[31] = '\0';
            memcpy(hosts[r], all[r].host, GT_JOB_HOST);
        }
        job->ranks = n;
        job->n_nodes = assign_nodes((const char (*)[GT_JOB_HOST])hosts, n, node_of, local_of,
                                    count);
        job->nodes = calloc((size_t)job->n_nodes, GT_JOB_HOST);
        if (!job->nodes) s = GT_ERR(GT_ERR_OOM, "the job's node list");
    }
    if (s == GT_OK) {
        for (int r = 0; r < n; r++) {
            gt_job_rank *jr = &job->rank[r];
            memcpy(jr->host, hosts[r], GT_JOB_HOST);
            jr->node = node_of[r];
            jr->local_index = local_of[r];
            jr->launcher_local_rank = all[r].launcher_local_rank;
            jr->gpu.index = all[r].gpu_index;
            snprintf(jr->gpu.name, sizeof jr->gpu.name, "%s", all[r].gpu_name);
            snprintf(jr->gpu.uuid, sizeof jr->gpu.uuid, "%s", all[r].gpu_uuid);
            snprintf(jr->gpu.pci_bus_id, sizeof jr->gpu.pci_bus_id, "%s", all[r].gpu_pci);
            if (jr->local_index == 0) memcpy(job->nodes[jr->node], hosts[r], GT_JOB_HOST);
        }
        job->ranks_per_node = count[0];
        for (int k = 1; k < job->n_nodes; k++)
            if (count[k] != count[0]) job->ranks_per_node = -1;
        gt_job_layout(job, n, job->layout, sizeof job->layout);
    }
    free(all);
    free(hosts);
    free(node_of);
    free(local_of);
    free(count);
    if (s != GT_OK) gt_job_free(job);
    return s;
}

void gt_job_free(gt_job *job) {
    if (!job) return;
    free(job->nodes);
    free(job->rank);
    job->nodes = NULL;
    job->rank = NULL;
    job->n_nodes = job->ranks = 0;
}

void gt_job_layout(const gt_job *job, int n, char *buf, size_t len) {
    if (!len) return;
    buf[0] = '\0';
    if (!job || !job->rank || n < 1 || n > job->ranks) {
        snprintf(buf, len, "1x%d", n < 1 ? 1 : n);
        return;
    }
    /* ranks [0, n) per node, nodes in order of first appearance among them */
    int *count = calloc((size_t)job->n_nodes, sizeof *count);
    int *order = calloc((size_t)job->n_nodes, sizeof *order);
    if (!count || !order) {
        free(count);
        free(order);
        snprintf(buf, len, "?x?");
        return;
    }
    int used = 0;
    for (int r = 0; r < n; r++)
        if (count[job->rank[r].node]++ == 0) order[used++] = job->rank[r].node;
    int even = 1;
    for (int k = 1; k < used; k++) even &= count[order[k]] == count[order[0]];
    if (even) {
        snprintf(buf, len, "%dx%d", used, count[order[0]]);
    } else {
        size_t at = (size_t)snprintf(buf, len, "%dx(", used);
        for (int k = 0; k < used && at < len; k++)
            at += (size_t)snprintf(buf + at, len - at, "%s%d", k ? "+" : "", count[order[k]]);
        if (at < len) snprintf(buf + at, len - at, ")");
    }
    free(count);
    free(order);
}
