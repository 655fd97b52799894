/* env.job: the job a report's run belonged to (docs/report-schema.md). */
#include "engine/job.h"
#include "reports/report_impl.h"

static json_t *str_or_null(const char *s) { return s && *s ? json_string(s) : json_null(); }

/* The members of env.job that say what kind of job it was, for matching
 * runs (compare lists a change of one as a fingerprint difference). The job
 * id, node list, host names and GPU UUIDs differ from run to run and are
 * left out on purpose. */
static const char *const g_identity[] = {"scheduler", "launcher", "n_nodes", "ranks",
                                         "ranks_per_node", "layout"};

void gt_report_set_job(gt_report *r, const gt_job *job) {
    json_t *root = gt_report_json(r);
    json_t *env = root ? json_object_get(root, "env") : NULL;
    if (!env || !job) return;
    json_t *o = json_object();
    json_object_set_new(o, "scheduler", json_string(job->scheduler));
    json_object_set_new(o, "launcher", json_string(job->launcher));
    json_object_set_new(o, "job_id", str_or_null(job->job_id));
    json_object_set_new(o, "node_list", str_or_null(job->node_list));
    json_object_set_new(o, "tasks_per_node", str_or_null(job->tasks_per_node));
    json_object_set_new(o, "ranks", json_integer(job->ranks));
    json_object_set_new(o, "n_nodes", json_integer(job->n_nodes));
    json_object_set_new(o, "ranks_per_node",
                        job->ranks_per_node >= 0 ? json_integer(job->ranks_per_node) : json_null());
    json_object_set_new(o, "layout", json_string(job->layout));
    json_t *nodes = json_array();
    for (int k = 0; k < job->n_nodes && job->nodes; k++)
        json_array_append_new(nodes, json_string(job->nodes[k]));
    json_object_set_new(o, "nodes", nodes);
    json_t *ranks = json_array();
    for (int i = 0; i < job->ranks && job->rank; i++) {
        const gt_job_rank *jr = &job->rank[i];
        json_t *e = json_object();
        json_object_set_new(e, "rank", json_integer(i));
        json_object_set_new(e, "host", json_string(jr->host));
        json_object_set_new(e, "node", json_integer(jr->node));
        json_object_set_new(e, "local_index", json_integer(jr->local_index));
        json_object_set_new(e, "launcher_local_rank", jr->launcher_local_rank >= 0
                                                          ? json_integer(jr->launcher_local_rank)
                                                          : json_null());
        if (jr->gpu.index >= 0) {
            json_t *g = json_object();
            json_object_set_new(g, "index", json_integer(jr->gpu.index));
            json_object_set_new(g, "name", str_or_null(jr->gpu.name));
            json_object_set_new(g, "uuid", str_or_null(jr->gpu.uuid));
            json_object_set_new(g, "pci_bus_id", str_or_null(jr->gpu.pci_bus_id));
            json_object_set_new(e, "gpu", g);
        } else {
            json_object_set_new(e, "gpu", json_null());
        }
        json_array_append_new(ranks, e);
    }
    json_object_set_new(o, "per_rank", ranks);
    json_t *id = json_array();
    for (size_t i = 0; i < sizeof g_identity / sizeof g_identity[0]; i++)
        json_array_append_new(id, json_string(g_identity[i]));
    json_object_set_new(o, "identity", id);
    json_object_set_new(env, "job", o);
}

void gt_report_set_job_grid(gt_report *r, const char *grid, int tp, int pp) {
    json_t *root = gt_report_json(r);
    json_t *env = root ? json_object_get(root, "env") : NULL;
    json_t *job = env ? json_object_get(env, "job") : NULL;
    if (!job || !grid || pp < 1 || tp < 1) return;
    json_object_set_new(job, "grid", json_string(grid));
    json_object_set_new(job, "grid_placement",
                        json_string("tensor-parallel groups on neighbouring ranks (inside a "
                                    "node first), then pipeline stages, data-parallel "
                                    "replicas outermost: rank = (replica * pp + stage) * tp "
                                    "+ tp_rank"));
    json_t *ranks = json_object_get(job, "per_rank");
    size_t i;
    json_t *e;
    json_array_foreach(ranks, i, e) {
        json_int_t k = (json_int_t)i;
        json_object_set_new(e, "dp", json_integer(k / (tp * pp)));
        json_object_set_new(e, "tp", json_integer(k % tp));
        json_object_set_new(e, "pp", json_integer(k / tp % pp));
    }
}
