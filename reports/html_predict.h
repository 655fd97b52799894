/* The HTML view's scaling prediction (docs/html-report.md, docs/predict.md):
 * the part of the page that html.c asks for with one call. */
#ifndef GT_HTML_PREDICT_H
#define GT_HTML_PREDICT_H

#include <stdio.h>

#include "reports/read.h"

/* Writes, into the page being built, the prediction made from the n reports
 * with the defaults of `gauntlet predict --check` (rank counts 1, 2, 4, 8,
 * 64, 512, 4096) as <script type="application/json" id="predict-data">, and
 * the script that defines window.gtPredictSection, which the page's renderer
 * calls to draw the "Scaling prediction" section. Reports without a train or
 * scaling step time write nothing (the section is left out); reports that
 * have one but lack what else the model needs write the reason, which the
 * section shows. */
void gt_html_predict_write(FILE *f, gt_report_doc *const *docs, int n);

#endif
