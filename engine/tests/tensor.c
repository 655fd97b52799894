/* engine.tensor.host: shapes, sizes, ownership (owned memory goes back to
 * the backend's allocator, views never do) and shape errors. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "engine/tensor.h"
#include "kernels/registry.h"

int main(void) {
    gt_backend *be = NULL;
    gt_backend_config bc = {.threads = 1, .device = -1};
    if (gt_backend_new("ref", &bc, &be) != GT_OK && gt_backend_new("cpu", &bc, &be) != GT_OK) {
        fprintf(stderr, "no host backend: %s\n", gt_last_error());
        return 77;
    }
    gt_alloc_stats s0, s;
    gt_allocator_stats(be->alloc, &s0);

    gt_tensor *t = NULL;
    int64_t shape[3] = {2, 3, 4};
    CHECK_OK(gt_tensor_new(be, GT_DTYPE_FP32, 3, shape, &t));
    if (t) {
        CHECK(gt_tensor_numel(t) == 24 && gt_tensor_nbytes(t) == 96 && t->owns && t->be == be,
              "numel %lld nbytes %zu", (long long)gt_tensor_numel(t), gt_tensor_nbytes(t));
        CHECK(t->data && (uintptr_t)t->data % GT_ALLOC_ALIGN == 0, "aligned data");
        memset(t->data, 0x5a, gt_tensor_nbytes(t));
        gt_allocator_stats(be->alloc, &s);
        CHECK(s.in_use == s0.in_use + 256, "allocated through the backend: %zu -> %zu",
              s0.in_use, s.in_use);
        gt_tensor *v = NULL;
        int64_t flat[1] = {12};
        CHECK_OK(gt_tensor_view(be, GT_DTYPE_BF16, 1, flat, t->data, &v));
        CHECK(v && !v->owns && v->data == t->data && gt_tensor_nbytes(v) == 24, "view");
        gt_tensor_free(v);
        gt_allocator_stats(be->alloc, &s);
        CHECK(s.in_use == s0.in_use + 256, "freeing a view leaves the memory alone");
        gt_tensor_free(t);
        gt_allocator_stats(be->alloc, &s);
        CHECK(s.in_use == s0.in_use, "freeing an owned tensor returns its memory");
    }

    CHECK_OK(gt_tensor_new(be, GT_DTYPE_FP64, 0, NULL, &t));
    CHECK(t && gt_tensor_numel(t) == 1 && gt_tensor_nbytes(t) == 8, "scalar");
    gt_tensor_free(t);
    int64_t empty[2] = {5, 0};
    CHECK_OK(gt_tensor_new(be, GT_DTYPE_FP16, 2, empty, &t));
    CHECK(t && gt_tensor_numel(t) == 0 && gt_tensor_nbytes(t) == 0, "empty tensor");
    gt_tensor_free(t);
    gt_tensor_free(NULL);

    int64_t five[5] = {1, 1, 1, 1, 1}, neg[2] = {3, -1}, huge[2] = {INT64_MAX / 2, 4};
    t = (gt_tensor *)1;
    CHECK_STATUS(gt_tensor_new(be, GT_DTYPE_FP32, 5, five, &t), GT_ERR_INVALID);
    CHECK(t == NULL, "out cleared on error");
    CHECK_STATUS(gt_tensor_new(be, GT_DTYPE_FP32, 2, neg, &t), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "-1") != NULL, "names the bad dimension: %s", gt_last_error());
    CHECK_STATUS(gt_tensor_new(be, GT_DTYPE_FP32, 2, huge, &t), GT_ERR_INVALID);
    CHECK_STATUS(gt_tensor_new(NULL, GT_DTYPE_FP32, 2, shape, &t), GT_ERR_INVALID);
    CHECK_STATUS(gt_tensor_view(be, GT_DTYPE_FP32, 2, shape, NULL, &t), GT_ERR_INVALID);

    char buf[64];
    int64_t gpt[3] = {2, 64, 768};
    CHECK(strcmp(gt_shape_str(3, gpt, buf, sizeof buf), "(2, 64, 768)") == 0, "%s", buf);
    int64_t five1[1] = {5};
    CHECK(strcmp(gt_shape_str(1, five1, buf, sizeof buf), "(5,)") == 0, "%s", buf);
    CHECK(strcmp(gt_shape_str(0, NULL, buf, sizeof buf), "()") == 0, "%s", buf);
    CHECK(gt_shape_numel(3, gpt) == 2 * 64 * 768, "shape_numel");

    gt_backend_free(be);
    return check_done("engine.tensor.host");
}
