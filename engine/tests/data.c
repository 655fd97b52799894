/* engine.data.host: token files (byte layout, round trips, every kind of
 * broken file), llm.c files, byte encoding, and the synthetic source's
 * entropy against an independent computation. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engine/data.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static void put_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot create %s", path);
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static unsigned char *get_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static uint32_t le32(const unsigned char *p) {
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reading `path` must fail with `want` and a message naming the file. */
static void expect_bad(const char *path_in, gt_status want, const char *what) {
    char path[512];
    snprintf(path, sizeof path, "%s", path_in);
    gt_tokens t;
    gt_error_clear();
    gt_status s = gt_tokens_read(path, &t);
    CHECK(s == want, "%s: got %s, want %s (%s)", what, gt_status_name(s), gt_status_name(want),
          gt_last_error());
    CHECK(strstr(gt_last_error(), path) != NULL, "%s: message names the file: %s", what,
          gt_last_error());
    CHECK(t.tokens == NULL, "%s: no tokens on failure", what);
    gt_tokens_release(&t);
}

static void test_gauntlet_files(void) {
    int32_t tok[5] = {0, 299, 7, 256, 1};
    char p[512];
    snprintf(p, sizeof p, "%s", tmp_path("a.tok"));
    CHECK_OK(gt_tokens_write(p, tok, 5, 300, 1.25));
    size_t n;
    unsigned char *b = get_file(p, &n);
    CHECK(b && n == 40 + 5 * 2, "file size %zu", n);
    if (b && n == 50) {
        double e;
        memcpy(&e, b + 32, 8);
        CHECK(memcmp(b, "GTTOKENS", 8) == 0, "magic");
        CHECK(le32(b + 8) == 1 && le32(b + 12) == 2 && le32(b + 16) == 300 && le32(b + 20) == 0,
              "version / width / vocab / reserved");
        CHECK(le32(b + 24) == 5 && le32(b + 28) == 0, "count as int64");
        CHECK(e == 1.25, "entropy double at offset 32");
        CHECK(b[40] == 0 && b[42] == 43 && b[43] == 1 && b[46] == 0 && b[47] == 1,
              "tokens little-endian uint16");
    }
    gt_tokens t;
    CHECK_OK(gt_tokens_read(p, &t));
    CHECK(t.n == 5 && t.vocab == 300 && t.entropy == 1.25 && strcmp(t.format, "gauntlet") == 0,
          "read back header");
    CHECK(t.tokens && memcmp(t.tokens, tok, sizeof tok) == 0, "read back tokens");
    gt_tokens_release(&t);
    gt_tokens_release(&t); /* released struct is zeroed: a second release is harmless */

    /* Vocabulary above 65536: 32-bit tokens; unknown entropy stays negative. */
    int32_t big[3] = {69999, 0, 65536};
    char p4[512];
    snprintf(p4, sizeof p4, "%s", tmp_path("b.tok"));
    CHECK_OK(gt_tokens_write(p4, big, 3, 70000, -3.0));
    b = (free(b), get_file(p4, &n));
    CHECK(b && n == 40 + 12 && le32(b + 12) == 4 && le32(b + 40) == 69999, "uint32 tokens");
    CHECK_OK(gt_tokens_read(p4, &t));
    CHECK(t.n == 3 && t.vocab == 70000 && t.entropy < 0 && t.tokens[2] == 65536, "uint32 read");
    gt_tokens_release(&t);

    /* Zero tokens is a valid file. */
    CHECK_OK(gt_tokens_write(tmp_path("empty.tok"), NULL, 0, 10, -1));
    CHECK_OK(gt_tokens_read(tmp_path("empty.tok"), &t));
    CHECK(t.n == 0, "empty file");
    gt_tokens_release(&t);

    CHECK_STATUS(gt_tokens_write(tmp_path("c.tok"), tok, 5, 299, -1), GT_ERR_INVALID);
    CHECK(access(tmp_path("c.tok"), F_OK) != 0, "a failed write leaves no file");

    /* Broken files, each derived from the good one. */
    b = (free(b), get_file(p, &n));
    put_file(tmp_path("trunc.tok"), b, n - 1);
    expect_bad(tmp_path("trunc.tok"), GT_ERR_IO, "one byte short");
    CHECK(strstr(gt_last_error(), "truncated") != NULL, "says truncated: %s", gt_last_error());
    put_file(tmp_path("hdr.tok"), b, 20);
    expect_bad(tmp_path("hdr.tok"), GT_ERR_IO, "cut inside the header");
    put_file(tmp_path("tiny.tok"), b, 3);
    expect_bad(tmp_path("tiny.tok"), GT_ERR_IO, "3 bytes");
    unsigned char m[64];
    memcpy(m, b, n);
    m[7] = 'X';
    put_file(tmp_path("magic.tok"), m, n);
    expect_bad(tmp_path("magic.tok"), GT_ERR_INVALID, "bad magic");
    CHECK(strstr(gt_last_error(), "magic") != NULL, "says magic: %s", gt_last_error());
    memcpy(m, b, n);
    m[8] = 2;
    put_file(tmp_path("ver.tok"), m, n);
    expect_bad(tmp_path("ver.tok"), GT_ERR_INVALID, "version 2");
    memcpy(m, b, n);
    m[12] = 3;
    put_file(tmp_path("width.tok"), m, n);
    expect_bad(tmp_path("width.tok"), GT_ERR_INVALID, "width 3");
    memcpy(m, b, n);
    m[42] = 0x2c; /* token 1 becomes 300 == vocab */
    put_file(tmp_path("vocab.tok"), m, n);
    expect_bad(tmp_path("vocab.tok"), GT_ERR_INVALID, "token >= vocab");
    CHECK(strstr(gt_last_error(), "token 1 ") != NULL, "names the token: %s", gt_last_error());
    memcpy(m, b, n);
    m[n] = 0;
    m[n + 1] = 0;
    put_file(tmp_path("long.tok"), m, n + 2);
    expect_bad(tmp_path("long.tok"), GT_ERR_INVALID, "trailing bytes");
    expect_bad(tmp_path("does-not-exist.tok"), GT_ERR_IO, "missing file");
    free(b);
}

static void test_llmc_files(void) {
    int32_t h[256] = {0};
    h[0] = 20240520;
    h[1] = 1;
    h[2] = 4;
    uint16_t tk[4] = {50256, 1, 2, 3};
    unsigned char buf[1024 + 8];
    memcpy(buf, h, 1024); /* the test host is little-endian, like llm.c's */
    memcpy(buf + 1024, tk, 8);
    put_file(tmp_path("l.bin"), buf, sizeof buf);
    gt_tokens t;
    CHECK_OK(gt_tokens_read(tmp_path("l.bin"), &t));
    CHECK(t.n == 4 && t.vocab == 50257 && t.entropy < 0 && strcmp(t.format, "llmc") == 0,
          "llm.c header: n %lld vocab %d", (long long)t.n, t.vocab);
    CHECK(t.tokens && t.tokens[0] == 50256 && t.tokens[3] == 3, "llm.c tokens");
    gt_tokens_release(&t);
    tk[1] = 60000;
    memcpy(buf + 1024, tk, 8);
    put_file(tmp_path("l2.bin"), buf, sizeof buf);
    CHECK_OK(gt_tokens_read(tmp_path("l2.bin"), &t));
    CHECK(t.vocab == 60001, "vocab from the largest token: %d", t.vocab);
    gt_tokens_release(&t);
    put_file(tmp_path("l3.bin"), buf, sizeof buf - 1);
    expect_bad(tmp_path("l3.bin"), GT_ERR_IO, "llm.c truncated");
    put_file(tmp_path("l4.bin"), buf, 500);
    expect_bad(tmp_path("l4.bin"), GT_ERR_IO, "llm.c header cut");
    h[1] = 2;
    memcpy(buf, h, 1024);
    put_file(tmp_path("l5.bin"), buf, sizeof buf);
    expect_bad(tmp_path("l5.bin"), GT_ERR_INVALID, "llm.c version 2");
}

static void test_encode(void) {
    const unsigned char text[] = {'h', 'i', 0, 0xff, '\n'};
    put_file(tmp_path("t.txt"), text, sizeof text);
    gt_tokens t;
    CHECK_OK(gt_tokens_encode_bytes(tmp_path("t.txt"), &t));
    CHECK(t.n == 5 && t.vocab == 256 && t.entropy < 0, "encode header");
    CHECK(t.tokens && t.tokens[0] == 'h' && t.tokens[2] == 0 && t.tokens[3] == 255,
          "bytes are tokens, unsigned");
    gt_tokens_release(&t);
    CHECK_STATUS(gt_tokens_encode_bytes(tmp_path("nope.txt"), &t), GT_ERR_IO);
}

/* Independent stationary distribution: solve pi (P - I) = 0, sum pi = 1 by
 * Gaussian elimination with partial pivoting on the dense matrix. */
static void stationary_dense(int V, const double *P, double *pi) {
    double *A = calloc((size_t)V * (V + 1), sizeof *A); /* V equations, augmented */
    for (int i = 0; i < V; i++)       /* equation i: sum_s pi_s (P[s][i] - [s==i]) = 0 */
        for (int s = 0; s < V; s++) A[i * (V + 1) + s] = P[s * V + i] - (s == i);
    for (int s = 0; s <= V; s++) A[(V - 1) * (V + 1) + s] = 1.0; /* replace one: sum = 1 */
    for (int c = 0; c < V; c++) {
        int piv = c;
        for (int r = c + 1; r < V; r++)
            if (fabs(A[r * (V + 1) + c]) > fabs(A[piv * (V + 1) + c])) piv = r;
        for (int k = 0; k <= V; k++) {
            double t = A[c * (V + 1) + k];
            A[c * (V + 1) + k] = A[piv * (V + 1) + k];
            A[piv * (V + 1) + k] = t;
        }
        for (int r = 0; r < V; r++) {
            if (r == c) continue;
            double f = A[r * (V + 1) + c] / A[c * (V + 1) + c];
            for (int k = c; k <= V; k++) A[r * (V + 1) + k] -= f * A[c * (V + 1) + k];
        }
    }
    for (int i = 0; i < V; i++) pi[i] = A[i * (V + 1) + V] / A[i * (V + 1) + i];
    free(A);
}

static double entropy_dense(int V, const double *P) {
    double *pi = malloc((size_t)V * sizeof *pi);
    stationary_dense(V, P, pi);
    double H = 0;
    for (int s = 0; s < V; s++)
        for (int t = 0; t < V; t++)
            if (P[s * V + t] > 0) H -= pi[s] * P[s * V + t] * log(P[s * V + t]);
    free(pi);
    return H;
}

static void test_markov_entropy(void) {
    /* Two states, closed form: pi = (b, a) / (a + b). */
    double a = 0.3, b = 0.2;
    int32_t next2[4] = {0, 1, 0, 1};
    double prob2[4] = {1 - a, a, b, 1 - b};
    gt_markov m2 = {.vocab = 2, .branch = 2, .next = next2, .prob = prob2};
    double H, pi[3];
    CHECK_OK(gt_markov_entropy(&m2, &H, pi));
    double h_a = -(a * log(a) + (1 - a) * log(1 - a)), h_b = -(b * log(b) + (1 - b) * log(1 - b));
    CHECK_NEAR(pi[0], 0.4, 1e-10);
    CHECK_NEAR(H, 0.4 * h_a + 0.6 * h_b, 1e-10);

    /* A 3-cycle is periodic: the lazy iteration must still converge; H = 0. */
    int32_t next3[3] = {1, 2, 0};
    double prob3[3] = {1, 1, 1};
    gt_markov m3 = {.vocab = 3, .branch = 1, .next = next3, .prob = prob3};
    CHECK_OK(gt_markov_entropy(&m3, &H, pi));
    CHECK_NEAR(H, 0.0, 1e-15);
    CHECK_NEAR(pi[2], 1.0 / 3, 1e-12);

    /* An asymmetric 3-state chain against the dense solve. */
    int32_t next[6] = {1, 2, 0, 2, 0, 1};
    double prob[6] = {0.9, 0.1, 0.5, 0.5, 0.25, 0.75};
    gt_markov m = {.vocab = 3, .branch = 2, .next = next, .prob = prob};
    double P[9] = {0, 0.9, 0.1, 0.5, 0, 0.5, 0.25, 0.75, 0};
    CHECK_OK(gt_markov_entropy(&m, &H, NULL));
    CHECK_NEAR(H, entropy_dense(3, P), 1e-10);

    prob[0] = 0.8; /* row 0 sums to 0.9 */
    CHECK_STATUS(gt_markov_entropy(&m, &H, NULL), GT_ERR_INVALID);
    prob[0] = 0.9;
    next[1] = 3;
    CHECK_STATUS(gt_markov_entropy(&m, &H, NULL), GT_ERR_INVALID);
}

static void test_synth(void) {
    gt_synth_config c = gt_synth_defaults();
    CHECK(c.vocab == 256 && c.branch == 4, "defaults");
    c.vocab = 12;
    c.branch = 3;
    c.seed = 77;
    c.n_tokens = 300000;
    gt_tokens t, t2;
    CHECK_OK(gt_synth_generate(&c, &t));
    CHECK(t.n == c.n_tokens && t.vocab == 12 && t.entropy > 0 && strcmp(t.format, "synth") == 0,
          "synth header: entropy %g", t.entropy);

    /* The entropy against a dense solve of the same chain. */
    gt_markov m;
    CHECK_OK(gt_markov_build(&c, &m));
    double P[144] = {0};
    for (int s = 0; s < 12; s++)
        for (int j = 0; j < 3; j++) P[s * 12 + m.next[s * 3 + j]] += m.prob[s * 3 + j];
    CHECK_NEAR(t.entropy, entropy_dense(12, P), 1e-10);
    CHECK(t.entropy <= log(3.0) + 1e-12, "at most log(branch)");

    /* Every transition in the sample exists in the chain, and the empirical
     * conditional entropy matches the rate. */
    static double cnt[144], row[12];
    int bad = 0;
    for (int64_t i = 0; i + 1 < t.n; i++) {
        int x = t.tokens[i], y = t.tokens[i + 1];
        if (x < 0 || x >= 12 || P[x * 12 + y] == 0) bad++;
        else {
            cnt[x * 12 + y]++;
            row[x]++;
        }
    }
    CHECK(bad == 0, "%d transitions not in the chain", bad);
    double He = 0, N = (double)(t.n - 1);
    for (int i = 0; i < 144; i++)
        if (cnt[i] > 0) He -= cnt[i] / N * log(cnt[i] / row[i / 12]);
    CHECK_NEAR(He, t.entropy, 0.01);
    gt_markov_release(&m);
    gt_markov_release(&m);

    CHECK_OK(gt_synth_generate(&c, &t2));
    CHECK(memcmp(t.tokens, t2.tokens, (size_t)t.n * 4) == 0 && t.entropy == t2.entropy,
          "same seed, same tokens");
    gt_tokens_release(&t2);
    c.seed = 78;
    CHECK_OK(gt_synth_generate(&c, &t2));
    CHECK(memcmp(t.tokens, t2.tokens, 4000) != 0, "another seed, other tokens");
    gt_tokens_release(&t2);

    /* The entropy survives the file bit for bit. */
    CHECK_OK(gt_tokens_write(tmp_path("s.tok"), t.tokens, t.n, t.vocab, t.entropy));
    CHECK_OK(gt_tokens_read(tmp_path("s.tok"), &t2));
    CHECK(t2.entropy == t.entropy && t2.n == t.n &&
              memcmp(t.tokens, t2.tokens, (size_t)t.n * 4) == 0,
          "synthetic file round trip");
    gt_tokens_release(&t2);
    gt_tokens_release(&t);

    c.branch = 1;
    c.n_tokens = 100;
    CHECK_OK(gt_synth_generate(&c, &t));
    CHECK(t.entropy == 0.0, "branch 1 is deterministic: %g", t.entropy);
    gt_tokens_release(&t);
    c.vocab = 256;
    c.branch = 256;
    c.n_tokens = 10;
    CHECK_OK(gt_synth_generate(&c, &t));
    CHECK(t.entropy > 0 && t.entropy < log(256.0), "dense chain: %g", t.entropy);
    gt_tokens_release(&t);
    c.branch = 0;
    CHECK_STATUS(gt_synth_generate(&c, &t), GT_ERR_INVALID);
    c.branch = 257;
    CHECK_STATUS(gt_synth_generate(&c, &t), GT_ERR_INVALID);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/gt_engine_data_%ld", base && *base ? base : "/tmp",
             (long)getpid());
    if (mkdir(g_dir, 0700) != 0) {
        fprintf(stderr, "cannot create %s\n", g_dir);
        return 1;
    }
    test_gauntlet_files();
    test_llmc_files();
    test_encode();
    test_markov_entropy();
    test_synth();
    int rc = check_done("engine.data.host");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return rc;
}
