/* gpt2 behind the generic model interface (models/model.h). */
#ifndef GT_GPT2_MODEL_H
#define GT_GPT2_MODEL_H

#include "models/gpt2/gpt2.h"
#include "models/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Wraps `g` (TAKES OWNERSHIP: gt_model_free frees it, and so does this
 * function when it fails), created for at most B sequences of T tokens, as a
 * gt_model called `name` (for reports; NULL: "gpt2"). For configurations
 * that are not a preset (--layers, --init-from llmc:...). */
gt_status gt_gpt2_model_wrap(gt_gpt2 *g, int B, int T, const char *name, gt_model **out);

#ifdef __cplusplus
}
#endif
#endif
