/* gt_env_collect on this host: every string is terminated and filled, the
 * CUDA fields found by dlopen either carry a version or say why not (cuBLASLt
 * unread without a device unless asked for), and
 * GPUs are listed only when the driver loads. Where the CUDA toolkit's
 * library folder exists, the libraries in it must be found through it even
 * without LD_LIBRARY_PATH. env.transport records the transport variables. */
#define _GNU_SOURCE
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/env.h"
#include "engine/tests/check.h"
#include "gt_config.h"

static int terminated(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

/* "absent" alone is not enough: the reason is what a reader acts on. */
static void check_lib_field(const char *what, const char *s, size_t cap) {
    CHECK(terminated(s, cap), "%s is not NUL-terminated", what);
    if (!terminated(s, cap)) return;
    CHECK(s[0] != '\0', "%s is empty", what);
    if (strncmp(s, "absent", 6) == 0)
        CHECK(strncmp(s, "absent (", 8) == 0 && strlen(s) > 10 && s[strlen(s) - 1] == ')',
              "%s = '%s' gives no reason", what, s);
    else if (GT_CUDA_EMULATOR && strcmp(what, "cuda_driver") != 0)
        /* the emulator's stand-ins, never a host library (docs/cuda-emulator.md) */
        CHECK(strncmp(s, "emulated (", 10) == 0 && s[strlen(s) - 1] == ')',
              "%s = '%s' in an emulator build", what, s);
    else
        CHECK(s[0] >= '0' && s[0] <= '9' && strchr(s, '(') != NULL,
              "%s = '%s' is neither a version with its path nor absent", what, s);
}

/* Whether the toolkit folder holds a library this name starts with. */
static int toolkit_has(const char *prefix) {
    char pat[256];
    glob_t g;
    snprintf(pat, sizeof pat, "/usr/local/cuda/lib64/%s*", prefix);
    int found = glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    if (found) globfree(&g);
    return found;
}

/* The value of env.transport's member `name`, NULL when absent. */
static const char *transport_get(const gt_env *e, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < e->n_transport; i++)
        if (strncmp(e->transport[i], name, n) == 0 && e->transport[i][n] == '=')
            return e->transport[i] + n + 1;
    return NULL;
}

/* env.transport: a transport variable recorded with its value, a launch
 * variable left out, a secret and an address with its port withheld; the
 * variables gone, the members gone. */
static void check_transport(void) {
    setenv("OMPI_MCA_btl", "self,tcp", 1);
    setenv("UCX_TLS", "tcp", 1);
    setenv("OMPI_MCA_ess_base_jobid", "4242", 1);
    setenv("NCCL_IB_SECRET", "hunter2", 1);
    setenv("NCCL_COMM_ID", "127.0.0.1:29500", 1);
    gt_env e;
    CHECK_OK(gt_env_collect(&e));
    const char *lib = transport_get(&e, "mpi_library"), *btl = transport_get(&e, "OMPI_MCA_btl");
    const char *tls = transport_get(&e, "UCX_TLS"), *secret = transport_get(&e, "NCCL_IB_SECRET");
    const char *id = transport_get(&e, "NCCL_COMM_ID");
    CHECK(e.n_transport >= 1 && strncmp(e.transport[0], "mpi_library=", 12) == 0,
          "the first member is not mpi_library");
    CHECK(lib && lib[0] && (GT_HAVE_MPI ? strcmp(lib, e.mpi) == 0 : strcmp(lib, "none") == 0),
          "mpi_library = '%s' (mpi '%s')", lib ? lib : "(absent)", e.mpi);
    CHECK(btl && strcmp(btl, "self,tcp") == 0, "OMPI_MCA_btl = '%s'", btl ? btl : "(absent)");
    CHECK(tls && strcmp(tls, "tcp") == 0, "UCX_TLS = '%s'", tls ? tls : "(absent)");
    CHECK(!transport_get(&e, "OMPI_MCA_ess_base_jobid"), "a launch variable was recorded");
    CHECK(secret && strcmp(secret, "(withheld)") == 0, "NCCL_IB_SECRET = '%s'",
          secret ? secret : "(absent)");
    CHECK(id && strcmp(id, "(withheld)") == 0, "NCCL_COMM_ID = '%s'", id ? id : "(absent)");
    for (int i = 0; i < e.n_vars; i++)
        CHECK(!strstr(e.vars[i], "hunter2"), "env.variables holds the secret: %s", e.vars[i]);
    for (int i = 0; i < e.n_transport; i++)
        printf("transport %s\n", e.transport[i]);
    gt_env_release(&e);

    unsetenv("OMPI_MCA_btl");
    unsetenv("UCX_TLS");
    CHECK_OK(gt_env_collect(&e));
    CHECK(!transport_get(&e, "OMPI_MCA_btl") && !transport_get(&e, "UCX_TLS"),
          "OMPI_MCA_btl or UCX_TLS recorded though unset");
    gt_env_release(&e);
}

/* A run's fingerprint on a host without a CUDA device leaves cuBLASLt's
 * version unread (opening the library costs a third of a second, nothing
 * there runs on it) and says so; gauntlet env's (GT_ENV_ALL_LIBS) reads it. */
static void check_cublas_unread(void) {
    gt_env e;
    CHECK_OK(gt_env_collect(&e));
    if (GT_CUDA_EMULATOR || e.n_gpus > 0)
        check_lib_field("cublas", e.cublas, sizeof e.cublas);
    else
        CHECK(strncmp(e.cublas, "not read: no CUDA device", 24) == 0,
              "a run's fingerprint without a device has cublas = '%s'", e.cublas);
    gt_env_release(&e);
}

int main(void) {
    check_cublas_unread();
    gt_env e;
    CHECK_OK(gt_env_collect_job(&e, GT_ENV_ALL_LIBS));

    const struct {
        const char *name;
        const char *s;
        size_t cap;
    } strs[] = {
        {"host", e.host, sizeof e.host},         {"os", e.os, sizeof e.os},
        {"cpu_model", e.cpu_model, sizeof e.cpu_model},
        {"compiler", e.compiler, sizeof e.compiler},
        {"blas", e.blas, sizeof e.blas},         {"mpi", e.mpi, sizeof e.mpi},
        {"hwloc", e.hwloc, sizeof e.hwloc},      {"cuda", e.cuda, sizeof e.cuda},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        CHECK(terminated(strs[i].s, strs[i].cap), "%s is not NUL-terminated", strs[i].name);
        CHECK(strs[i].s[0] != '\0', "%s is empty", strs[i].name);
    }
    CHECK(e.cpu_logical >= 1, "cpu_logical = %d", e.cpu_logical);

    check_lib_field("cuda_driver", e.cuda_driver, sizeof e.cuda_driver);
    check_lib_field("cuda_runtime", e.cuda_runtime, sizeof e.cuda_runtime);
    check_lib_field("cublas", e.cublas, sizeof e.cublas);
    check_lib_field("cudnn", e.cudnn, sizeof e.cudnn);
    check_lib_field("nccl", e.nccl, sizeof e.nccl);

    CHECK(e.n_gpus >= 0 && e.n_gpus <= GT_ENV_MAX_GPUS, "n_gpus = %d", e.n_gpus);
    if (strncmp(e.cuda_driver, "absent", 6) == 0)
        CHECK(e.n_gpus == 0, "%d GPU(s) listed without a driver (%s)", e.n_gpus, e.cuda_driver);
    for (int i = 0; i < e.n_gpus && i < GT_ENV_MAX_GPUS; i++) {
        const gt_env_gpu *g = &e.gpus[i];
        CHECK(terminated(g->name, sizeof g->name) && terminated(g->uuid, sizeof g->uuid) &&
                  terminated(g->throttle_names, sizeof g->throttle_names),
              "gpu %d: a string is not NUL-terminated", i);
        /* a listed device answered cuDeviceGet: its name and SMs are known */
        CHECK(g->name[0] != '\0', "gpu %d has no name", i);
        CHECK(g->sm_count > 0, "gpu %d: sm_count = %d", i, g->sm_count);
        CHECK(g->uuid[0] == '\0' || strncmp(g->uuid, "GPU-", 4) == 0, "gpu %d: uuid '%s'", i,
              g->uuid);
        CHECK(!g->has_throttle || g->throttle_names[0] != '\0',
              "gpu %d: throttle 0x%llx not decoded", i, g->throttle_reasons);
        printf("gpu %d: %s %s, %d SMs, cc %d.%d\n", i, g->name, g->uuid, g->sm_count,
               g->cc_major, g->cc_minor);
    }

    /* Found through /usr/local/cuda/lib64 when nothing else points there. */
    const struct {
        const char *prefix, *field, *value;
    } toolkit[] = {
        {"libcudart.so", "cuda_runtime", e.cuda_runtime},
        {"libcublasLt.so", "cublas", e.cublas},
        {"libcudnn.so", "cudnn", e.cudnn},
        {"libnccl.so", "nccl", e.nccl},
    };
    for (size_t i = 0; i < sizeof toolkit / sizeof toolkit[0] && !GT_CUDA_EMULATOR; i++) {
        if (!toolkit_has(toolkit[i].prefix)) {
            printf("skip: no /usr/local/cuda/lib64/%s*\n", toolkit[i].prefix);
            continue;
        }
        CHECK(strncmp(toolkit[i].value, "absent", 6) != 0,
              "/usr/local/cuda/lib64 has %s but %s = '%s'", toolkit[i].prefix, toolkit[i].field,
              toolkit[i].value);
    }
    printf("cuda_driver  %s\ncuda_runtime %s\ncublas       %s\ncudnn        %s\nnccl         %s\n",
           e.cuda_driver, e.cuda_runtime, e.cublas, e.cudnn, e.nccl);

    /* a second collection sees the same libraries (nothing left half-open) */
    gt_env again;
    CHECK_OK(gt_env_collect_job(&again, GT_ENV_ALL_LIBS));
    CHECK(strcmp(again.cuda_runtime, e.cuda_runtime) == 0 && strcmp(again.nccl, e.nccl) == 0 &&
              again.n_gpus == e.n_gpus,
          "second collection differs: '%s' vs '%s'", again.cuda_runtime, e.cuda_runtime);
    gt_env_release(&again);
    gt_env_release(&e);
    check_transport();
    return check_done("engine.env.host");
}
