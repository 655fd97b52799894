#define _POSIX_C_SOURCE 200809L
/* llm.c model files: parameters written in llm.c's layout load back bitwise;
 * a different config, a truncated file, a bad magic or another version are
 * refused with the right status and a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backend.h"
#include "engine/tests/check.h"
#include "kernels/registry.h"
#include "models/gpt2/gpt2.h"


static void write_file(const char *path, const gt_gpt2_config *c, int version, int magic,
                       const float *p, size_t n) {
    int32_t h[256] = {0};
    h[0] = magic;
    h[1] = version;
    h[2] = c->max_seq_len;
    h[3] = c->vocab_size;
    h[4] = c->num_layers;
    h[5] = c->num_heads;
    h[6] = c->channels;
    h[7] = c->padded_vocab_size;
    FILE *f = fopen(path, "wb");
    fwrite(h, sizeof h, 1, f);
    fwrite(p, sizeof(float), n, f);
    fclose(f);
}

int main(void) {
    gt_backend *be = NULL;
    gt_backend_config bc = {0, -1};
    if (gt_backend_new("cpu", &bc, &be) != GT_OK) return 1;
    gt_gpt2_config c = {.max_seq_len = 16, .vocab_size = 50, .padded_vocab_size = 64,
                        .num_layers = 2, .num_heads = 2, .channels = 8};
    gt_gpt2 *a = NULL, *b = NULL;
    if (gt_gpt2_new(be, &c, 2, 16, &a) != GT_OK || gt_gpt2_init_random(a, 99) != GT_OK ||
        gt_gpt2_new(be, &c, 2, 16, &b) != GT_OK)
        return 1;
    size_t n = gt_gpt2_num_params(a);
    float *pa = malloc(n * sizeof(float)), *pb = malloc(n * sizeof(float));
    gt_gpt2_get_params(a, pa);
    char path[] = "/tmp/gt_llmc_XXXXXX";
    int fd = mkstemp(path);
    close(fd);

    write_file(path, &c, 3, 20240326, pa, n);
    gt_status s = gt_gpt2_load_llmc(b, path);
    CHECK(s == GT_OK, "load: %s", gt_last_error());
    gt_gpt2_get_params(b, pb);
    CHECK(memcmp(pa, pb, n * sizeof(float)) == 0, "parameters differ after the round trip");
    gt_gpt2_config rc;
    CHECK(gt_gpt2_read_llmc_config(path, &rc) == GT_OK && rc.num_layers == 2 &&
               rc.padded_vocab_size == 64,
           "config read back wrong");

    gt_gpt2_config other = c;
    other.num_layers = 3;
    write_file(path, &other, 3, 20240326, pa, n);
    s = gt_gpt2_load_llmc(b, path);
    CHECK(s == GT_ERR_MISMATCH && strstr(gt_last_error(), "num_layers"),
           "config mismatch: got %s '%s'", gt_status_name(s), gt_last_error());

    write_file(path, &c, 3, 20240326, pa, n / 2);
    s = gt_gpt2_load_llmc(b, path);
    CHECK(s == GT_ERR_IO && strstr(gt_last_error(), "truncated"), "truncated: got %s '%s'",
           gt_status_name(s), gt_last_error());

    write_file(path, &c, 3, 12345, pa, n);
    s = gt_gpt2_load_llmc(b, path);
    CHECK(s == GT_ERR_INVALID && strstr(gt_last_error(), "magic"), "bad magic: got %s '%s'",
           gt_status_name(s), gt_last_error());

    write_file(path, &c, 5, 20240326, pa, n);
    s = gt_gpt2_load_llmc(b, path);
    CHECK(s == GT_ERR_UNSUPPORTED && strstr(gt_last_error(), "version 5"),
           "version 5: got %s '%s'", gt_status_name(s), gt_last_error());

    s = gt_gpt2_load_llmc(b, "/nonexistent/model.bin");
    CHECK(s == GT_ERR_IO && strstr(gt_last_error(), "/nonexistent/model.bin"),
           "missing file: got %s '%s'", gt_status_name(s), gt_last_error());

    unlink(path);
    free(pa), free(pb);
    gt_gpt2_free(a);
    gt_gpt2_free(b);
    gt_backend_free(be);
    return check_done("models.gpt2_llmc");
}
