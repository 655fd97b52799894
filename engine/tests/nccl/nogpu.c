/* Asking for the nccl communicator where it cannot run fails with a message
 * that says why and what to do (engine.comm_nccl_nogpu.*): built without
 * NCCL, or no GPU visible (the advice names the communicator this build
 * has instead: mpi, or self without MPI). Exit 77 when
 * this machine can run NCCL (engine.comm.nccl_np* covers that). */
#include <string.h>

#include "engine/comm.h"
#include "engine/tests/check.h"
#include "gt_config.h"

int main(void) {
    gt_comm_config cfg = gt_comm_defaults();
    cfg.backend = "nccl";
    gt_comm *c = NULL;
    gt_status s = gt_comm_world(&cfg, &c);
    if (s == GT_OK) {
        printf("engine.comm_nccl_nogpu: skipped: this machine runs NCCL (%s)\n",
               gt_comm_library_version(c));
        gt_comm_free(c);
        return 77;
    }
    const char *msg = gt_last_error();
    printf("gt_comm_world(nccl): %s [%s]\n", msg, gt_status_name(s));
    CHECK(s == GT_ERR_UNSUPPORTED, "status %s, want GT_ERR_UNSUPPORTED", gt_status_name(s));
    CHECK(c == NULL, "a communicator came back with an error");
    CHECK(strstr(msg, "'nccl'") != NULL, "the message does not name the backend: %s", msg);
    const char *instead = GT_HAVE_MPI ? "--comm mpi" : "--comm self";
    if (!GT_HAVE_NCCL)
        CHECK(strstr(msg, "not built in") != NULL, "no 'not built in' in: %s", msg);
    else
        CHECK(strstr(msg, "no CUDA device") != NULL && strstr(msg, instead) != NULL,
              "no 'no CUDA device ... %s' in: %s", instead, msg);
    /* auto never picks nccl, and an unknown name lists it */
    gt_comm_config bad = gt_comm_defaults();
    bad.backend = "nccl2";
    CHECK_STATUS(gt_comm_world(&bad, &c), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "nccl") != NULL, "choices do not list nccl: %s", gt_last_error());
    return check_done("engine.comm_nccl_nogpu");
}
