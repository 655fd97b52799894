/* Fuzz target: the token-file reader (engine/data.h, gt_tokens_read_mem),
 * both formats. Any input must give GT_OK with tokens that keep the
 * reader's promises, or an error with a message; never a crash, a leak or
 * undefined behaviour (the target is built with ASan + UBSan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gt_tokens t;
    gt_error_clear();
    gt_status s = gt_tokens_read_mem(data, size, "fuzz", &t);
    if (s == GT_OK) {
        if (t.n < 0 || (t.n > 0 && !t.tokens) || t.vocab < 1) abort();
        for (int64_t i = 0; i < t.n; i++)
            if (t.tokens[i] < 0 || t.tokens[i] >= t.vocab) abort();
    } else {
        if (t.tokens != NULL) abort(); /* nothing is handed out on failure */
        if (gt_last_error()[0] == '\0') abort();
    }
    gt_tokens_release(&t);
    return 0;
}
