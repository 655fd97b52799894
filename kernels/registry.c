/* The list of backends and their construction by name (kernels/registry.h). */
#include "kernels/registry.h"

#include <string.h>

/* Every backend, written once: X(name) for gt_backend_<name>_new, in the
 * order messages list them. */
#define GT_BACKEND_LIST(X) X(ref) X(cpu) X(cuda)

static const struct {
    const char *name;
    gt_status (*create)(const gt_backend_config *cfg, gt_backend **out);
} g_backends[] = {
#define GT_BACKEND_ENTRY_(name) {#name, gt_backend_##name##_new},
    GT_BACKEND_LIST(GT_BACKEND_ENTRY_)
#undef GT_BACKEND_ENTRY_
};

/* "ref, cpu, cuda" */
#define GT_BACKEND_NAME_(name) ", " #name
static const char *const g_names = &GT_BACKEND_LIST(GT_BACKEND_NAME_)[2];
#undef GT_BACKEND_NAME_

void gt_kernels_init(void) {
    gt_comm_divide_fn divide = gt_backend_cuda_comm_divide();
    if (divide && gt_comm_divide() != divide) gt_comm_set_divide(divide);
}

gt_status gt_backend_new(const char *name, const gt_backend_config *cfg, gt_backend **out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_backend_new: out is NULL");
    *out = NULL;
    gt_backend_config def = {.threads = 0, .device = -1};
    if (!cfg) cfg = &def;
    if (!name) return GT_ERR(GT_ERR_INVALID, "backend name is NULL (valid: %s)", g_names);
    gt_kernels_init();
    for (size_t i = 0; i < sizeof g_backends / sizeof g_backends[0]; i++)
        if (strcmp(name, g_backends[i].name) == 0) return g_backends[i].create(cfg, out);
    return GT_ERR(GT_ERR_INVALID, "unknown backend '%s' (valid: %s)", name, g_names);
}
