/* Built when CUDA is not: the cuda backend exists and says why it is absent. */
#include "kernels/registry.h"

gt_status gt_backend_cuda_new(const gt_backend_config *cfg, gt_backend **out) {
    (void)cfg;
    *out = NULL;
    return GT_ERR(GT_ERR_UNSUPPORTED,
                  "the cuda backend is not compiled in: configure with nvcc on PATH, "
                  "CUDACXX set, or the toolkit in /usr/local/cuda");
}

gt_comm_divide_fn gt_backend_cuda_comm_divide(void) { return NULL; }
