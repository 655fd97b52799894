# The slurm-labelled tests (harness/tests/slurm.sh, docs/clusters.md): a two-node Slurm
# cluster on this machine (ci/slurm/cluster.sh: munged, slurmctld, one slurmd in each of two
# network namespaces) started by the fixture's setup test and stopped by its cleanup test;
# the tests submit jobs to it. Each exits 77 (skipped) with the reason when the cluster
# cannot run here: not root, no network or UTS namespaces, no slurm-wlm / munge (ci/deps.sh).
# They run inside `make test`: about 3.5 minutes on 2 cores (docs/clusters.md).
#
# The cluster's instance is named after this build directory, so that two build trees (or a
# developer's own cluster, instance "dev") never share namespaces, subnet or state.
string(MD5 gt_slurm_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${gt_slurm_hash}" 0 7 gt_slurm_hash)
set(GT_SLURM_ENV "${GT_TEST_ENV};GT_SLURM_INSTANCE=t${gt_slurm_hash}")
set(gt_slurm_sh ${CMAKE_CURRENT_SOURCE_DIR}/slurm.sh)

# The modes that run Open MPI's mpirun (or srun --mpi=pmix, Open MPI's) in an Open MPI
# build; in an MPICH build (GT_MPI=mpich, Hydra's launcher) the mode mpich: srun
# --mpi=pmi2 and mpiexec.mpich inside salloc.
if(GT_MPIEXEC_FAMILY STREQUAL "hydra")
    set(gt_slurm_modes mpich)
else()
    set(gt_slurm_modes nightly srun train jobinfo doctor incomplete)
endif()
if(GT_HAVE_MPI)
    add_test(NAME slurm.cluster.setup COMMAND bash ${gt_slurm_sh} setup)
    add_test(NAME slurm.cluster.cleanup COMMAND bash ${gt_slurm_sh} cleanup)
    set_tests_properties(slurm.cluster.setup PROPERTIES FIXTURES_SETUP gt_slurm_cluster)
    set_tests_properties(slurm.cluster.cleanup PROPERTIES FIXTURES_CLEANUP gt_slurm_cluster)
    set_tests_properties(slurm.cluster.setup slurm.cluster.cleanup PROPERTIES
                         LABELS "slurm" TIMEOUT 60 SKIP_RETURN_CODE 77
                         RESOURCE_LOCK gt_slurm_cluster ENVIRONMENT "${GT_SLURM_ENV}")
    # nightly: two sbatch nights, the second gated against the first; srun: the
    # collectives and scaling suites across the two nodes; train: --deterministic on
    # two nodes bitwise equal to one rank (plain, ZeRO-1 under mpirun, ZeRO-3), and tp=2
    # inside each node with pp=2 or dp=2 across equal to tp=2 on one node; jobinfo:
    # the job in the report; doctor: the slowed node named; incomplete: scancel, a dead
    # slurmd and a stopped rank leave valid, incomplete reports; mpich: MPICH's two launches under Slurm. PROCESSORS 2:
    # each job takes both cores, and the nightly gate's and the doctor's timings must
    # not share them with another test.
    foreach(mode ${gt_slurm_modes})
        add_test(NAME slurm.${mode}.cpu
                 COMMAND bash ${gt_slurm_sh} ${mode} $<TARGET_FILE:gauntlet>
                         $<TARGET_FILE:report_check> ${MPIEXEC_EXECUTABLE})
        set_tests_properties(slurm.${mode}.cpu PROPERTIES LABELS "slurm;mpi" TIMEOUT 300
                             SKIP_RETURN_CODE 77 PROCESSORS 2 FIXTURES_REQUIRED gt_slurm_cluster
                             RESOURCE_LOCK gt_slurm_cluster ENVIRONMENT "${GT_SLURM_ENV}")
    endforeach()
    gt_test_costs(slurm.srun.cpu 70 slurm.incomplete.cpu 55 slurm.nightly.cpu 40
                  slurm.jobinfo.cpu 25 slurm.doctor.cpu 10 slurm.train.cpu 30 slurm.mpich.cpu 40)
    # a rate-limited link on a 4-node cluster named by the doctor and flagged by compare,
    # and the doctor and the collectives on 8 nodes x 2 ranks (harness/tests/slurm_links.sh):
    # clusters of its own, started and stopped by the test; the lock keeps it apart from
    # the fixture's tests (both cores, and the namespaces' CPU time)
    # (srun --mpi=pmix: Open MPI builds only)
    if(NOT GT_MPIEXEC_FAMILY STREQUAL "hydra")
        add_test(NAME slurm.links.cpu
                 COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/slurm_links.sh $<TARGET_FILE:gauntlet>
                         $<TARGET_FILE:report_check>)
        set_tests_properties(slurm.links.cpu PROPERTIES LABELS "slurm;mpi" TIMEOUT 900
                             SKIP_RETURN_CODE 77 PROCESSORS 2 RESOURCE_LOCK gt_slurm_cluster
                             ENVIRONMENT "${GT_SLURM_ENV}")
        gt_test_costs(slurm.links.cpu 240)
    endif()
else()
    # the tests say why they are skipped rather than vanishing from the list
    foreach(mode nightly srun train jobinfo doctor incomplete links)
        add_test(NAME slurm.${mode}.cpu COMMAND bash ${gt_slurm_sh} nompi)
        set_tests_properties(slurm.${mode}.cpu PROPERTIES LABELS "slurm;mpi" TIMEOUT 60
                             SKIP_RETURN_CODE 77)
    endforeach()
endif()
