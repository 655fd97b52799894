/* The GPU half of the environment fingerprint: driver, CUDA libraries and
 * devices, found at run time with dlopen. Nothing here is linked or needs a
 * CUDA header, so a build without CUDA (or a machine without a driver)
 * still reports which libraries a run could have picked up, and a CUDA
 * build reports the driver and libraries it actually ran against, which can
 * differ from the toolkit it was compiled with.
 *
 * The few entry points are declared below from the documented C
 * signatures; the enum values are the ones in cuda.h and nvml.h. */
#define _GNU_SOURCE
#include "engine/env.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/timer.h"
#include "gt_config.h"

/* ---- declarations of the entry points ------------------------------------------- */

/* cuda.h: CUresult is an enum (0 = CUDA_SUCCESS), CUdevice an int. */
typedef int (*cu_init_fn)(unsigned flags);
typedef int (*cu_int_fn)(int *value);                 /* cuDriverGetVersion, cuDeviceGetCount */
typedef int (*cu_device_get_fn)(int *dev, int ordinal);
typedef int (*cu_name_fn)(char *name, int len, int dev);
typedef int (*cu_uuid_fn)(unsigned char uuid[16], int dev); /* CUuuid is 16 bytes */
typedef int (*cu_attr_fn)(int *value, int attrib, int dev);
typedef int (*cu_total_mem_fn)(size_t *bytes, int dev);
typedef int (*cu_pci_fn)(char *bus_id, int len, int dev); /* cuDeviceGetPCIBusId */
enum {
    CU_ATTR_CLOCK_RATE = 13,        /* kHz */
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_MEMORY_CLOCK_RATE = 36, /* kHz */
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
};

/* nvml.h: nvmlReturn_t is an enum (0 = NVML_SUCCESS), nvmlDevice_t a pointer. */
typedef void *nvml_device;
typedef struct {
    unsigned long long total, free, used; /* nvmlMemory_t (v1), bytes */
} nvml_memory;
typedef int (*nvml_void_fn)(void);                            /* nvmlInit_v2, nvmlShutdown */
typedef int (*nvml_str_fn)(char *buf, unsigned len);          /* nvmlSystemGetDriverVersion */
typedef int (*nvml_count_fn)(unsigned *count);
typedef int (*nvml_handle_fn)(unsigned index, nvml_device *dev);
typedef int (*nvml_dev_str_fn)(nvml_device dev, char *buf, unsigned len);
typedef int (*nvml_clock_fn)(nvml_device dev, int type, unsigned *mhz);
typedef int (*nvml_dev_uint_fn)(nvml_device dev, unsigned *value); /* power, mW */
typedef int (*nvml_temp_fn)(nvml_device dev, int sensor, unsigned *celsius);
typedef int (*nvml_reasons_fn)(nvml_device dev, unsigned long long *reasons);
typedef int (*nvml_memory_fn)(nvml_device dev, nvml_memory *mem);
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };
#define NVML_BUF 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE */

/* nvmlClocksEventReason* bits (the older ...ThrottleReason* have the same values). */
static const struct {
    unsigned long long bit;
    const char *name;
} g_reasons[] = {
    {0x1, "gpu_idle"},        {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},     {0x10, "sync_boost"},         {0x20, "sw_thermal"},
    {0x40, "hw_thermal"},     {0x80, "hw_power_brake"},     {0x100, "display_clocks"},
    {0x200, "board_limit"},   {0x400, "reliability"},
};

/* ---- finding the libraries ------------------------------------------------------ */

/* Where the toolkit and pip wheels put the libraries when nothing adds them
 * to LD_LIBRARY_PATH (GPU images often ship CUDA only as wheels, e.g.
 * .../dist-packages/nvidia/cu13/lib or nvidia/cudnn/lib). */
typedef struct lib_dirs {
    glob_t g;
    int have;
} lib_dirs;

static void dirs_find(lib_dirs *d) {
    static const char *const fixed[] = {
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/*-linux/lib",
        "/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
        "/usr/local/lib/python3*/site-packages/nvidia/*/lib",
        "/usr/lib/python3*/dist-packages/nvidia/*/lib",
        "/usr/lib/python3*/site-packages/nvidia/*/lib",
        "/opt/conda/lib/python3*/site-packages/nvidia/*/lib",
    };
    /* virtual environments and conda live where the user put them */
    static const char *const rel[][2] = {
        {"VIRTUAL_ENV", "/lib/python3*/site-packages/nvidia/*/lib"},
        {"CONDA_PREFIX", "/lib/python3*/site-packages/nvidia/*/lib"},
        {"CONDA_PREFIX", "/lib"},
        {"HOME", "/.local/lib/python3*/site-packages/nvidia/*/lib"},
    };
    memset(d, 0, sizeof *d);
    int flags = GLOB_ONLYDIR;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        glob(fixed[i], flags, NULL, &d->g);
        flags |= GLOB_APPEND;
    }
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        const char *base = getenv(rel[i][0]);
        char pat[512];
        if (!base || !base[0]) continue;
        if (snprintf(pat, sizeof pat, "%s%s", base, rel[i][1]) >= (int)sizeof pat) continue;
        glob(pat, flags, NULL, &d->g);
    }
    d->have = 1;
}

static void dirs_free(lib_dirs *d) {
    if (d->have) globfree(&d->g);
    d->have = 0;
}

/* Truncating copy: the reasons and paths are shortened on purpose. */
static void copy_str(char *dst, size_t len, const char *src) {
    size_t n = strlen(src);
    if (n >= len) n = len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The file ld.so actually mapped, for the record. */
static void loaded_path(void *h, char *path, size_t len) {
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) {
        char *real = realpath(lm->l_name, NULL);
        copy_str(path, len, real ? real : lm->l_name);
        free(real);
    } else {
        snprintf(path, len, "?");
    }
}

/* Opens the first of `names` that loads: by name (ld.so cache,
 * LD_LIBRARY_PATH), then in `dirs` (NULL: by name only). On failure `why`
 * gets a short reason: "libX not found", or the loader's error for a file
 * that exists but does not load (a missing dependency, a wrong ELF class). */
static void *lib_open(const char *const *names, size_t n, lib_dirs *dirs, char *path,
                      size_t path_len, char *why, size_t why_len) {
    /* RTLD_LAZY: cublasLt and nccl are hundreds of MB; only one symbol is called.
     * RTLD_LOCAL: their symbols must not satisfy anyone else's lookups.
     * (Not RTLD_NODELETE: it would stop the 72 KiB libstdc++ pool these
     * libraries leave at dlclose, but glibc then leaks in _dl_close_worker
     * for every later dlclose, hwloc's plugins included; ci/valgrind.supp
     * names the pool instead.) */
    const int mode = RTLD_LAZY | RTLD_LOCAL;
    snprintf(why, why_len, "%s not found", names[0]);
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(names[i], mode);
        if (h) {
            loaded_path(h, path, path_len);
            return h;
        }
    }
    if (!dirs) return NULL;
    if (!dirs->have) dirs_find(dirs);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < dirs->g.gl_pathc; k++) {
            char file[1024];
            if (snprintf(file, sizeof file, "%s/%s", dirs->g.gl_pathv[k], names[i]) >=
                    (int)sizeof file ||
                access(file, R_OK) != 0)
                continue;
            void *h = dlopen(file, mode);
            if (h) {
                loaded_path(h, path, path_len);
                return h;
            }
            const char *err = dlerror();
            copy_str(why, why_len, err ? err : file);
        }
    }
    return NULL;
}

/* dlsym into a function pointer: ISO C has no object-to-function pointer
 * cast, POSIX guarantees this copy works. */
static void *sym(void *h, const char *name) {
    return h ? dlsym(h, name) : NULL;
}
#define SYM(fp, h, name)                        \
    do {                                        \
        void *sym_p_ = sym((h), (name));        \
        memcpy(&(fp), &sym_p_, sizeof sym_p_);  \
    } while (0)

static void absent(char *out, size_t len, const char *why) {
    snprintf(out, len, "absent (%s)", why);
}

/* ---- version-only libraries ----------------------------------------------------- */

/* "maj.min.patch" from the codes these libraries use: major*10000 + minor*100 +
 * patch (cuBLAS 11+, cuDNN 9+, NCCL 2.9+), or major*1000 + minor*100 + patch
 * (cuDNN <= 8, NCCL < 2.9). */
static void version3(char *buf, size_t len, long v, long first_new) {
    if (v >= first_new)
        snprintf(buf, len, "%ld.%ld.%ld", v / 10000, (v / 100) % 100, v % 100);
    else
        snprintf(buf, len, "%ld.%ld.%ld", v / 1000, (v % 1000) / 100, v % 100);
}

typedef enum { LIB_CUDART, LIB_CUBLASLT, LIB_CUDNN, LIB_NCCL } lib_kind;

/* cuBLASLt's names, newest first: probed for its version, and asked whether
 * this process has it loaded (cublaslt_wanted) */
static const char *const cublaslt_names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                             "libcublasLt.so"};

static void probe_version_lib(lib_kind kind, lib_dirs *dirs, char *out, size_t len) {
    static const char *const cudart[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    static const char *const cudnn[] = {"libcudnn.so.9", "libcudnn.so"};
    static const char *const nccl[] = {"libnccl.so.2", "libnccl.so"};
    const char *const *names = kind == LIB_CUDART     ? cudart
                               : kind == LIB_CUBLASLT ? cublaslt_names
                               : kind == LIB_CUDNN    ? cudnn
                                                      : nccl;
    size_t n = kind == LIB_CUDART || kind == LIB_CUBLASLT ? 3 : 2;
    char path[160], why[160], ver[32] = "";
    void *h = lib_open(names, n, dirs, path, sizeof path, why, sizeof why);
    if (!h) {
        absent(out, len, why);
        return;
    }
    const char *fn_name = "";
    int ok = 0;
    switch (kind) {
    case LIB_CUDART: {
        /* cudaRuntimeGetVersion needs no driver: 13000 = 13.0 */
        int (*fn)(int *) = NULL;
        fn_name = "cudaRuntimeGetVersion";
        SYM(fn, h, fn_name);
        int v = 0;
        if (fn && fn(&v) == 0 && v > 0) {
            snprintf(ver, sizeof ver, "%d.%d", v / 1000, (v % 1000) / 10);
            ok = 1;
        }
        break;
    }
    case LIB_CUBLASLT: {
        size_t (*fn)(void) = NULL;
        fn_name = "cublasLtGetVersion";
        SYM(fn, h, fn_name);
        if (fn) {
            version3(ver, sizeof ver, (long)fn(), 0);
            ok = 1;
        }
        break;
    }
    case LIB_CUDNN: {
        size_t (*fn)(void) = NULL;
        fn_name = "cudnnGetVersion";
        SYM(fn, h, fn_name);
        if (fn) {
            version3(ver, sizeof ver, (long)fn(), 90000);
            ok = 1;
        }
        break;
    }
    case LIB_NCCL: {
        int (*fn)(int *) = NULL;
        fn_name = "ncclGetVersion";
        SYM(fn, h, fn_name);
        int v = 0;
        if (fn && fn(&v) == 0 && v > 0) {
            version3(ver, sizeof ver, v, 20900);
            ok = 1;
        }
        break;
    }
    }
    if (ok)
        snprintf(out, len, "%s (%s)", ver, path);
    else
        snprintf(out, len, "absent (%s: %s failed)", path, fn_name);
    /* Only a version was asked for: give the mapping back. A CUDA build that
     * links these libraries keeps them, dlclose only drops our reference. */
    dlclose(h);
}

/* ---- driver and devices --------------------------------------------------------- */

typedef struct nvml_api {
    void *h;
    nvml_count_fn count;
    nvml_handle_fn handle;
    nvml_dev_str_fn name, uuid;
    nvml_clock_fn clock, max_clock;
    nvml_temp_fn temp;
    nvml_dev_uint_fn power;
    nvml_reasons_fn reasons;
    nvml_memory_fn memory;
} nvml_api;

/* NVML's spelling of a CUDA UUID, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
static void format_uuid(const unsigned char b[16], char *out, size_t len) {
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static void decode_reasons(unsigned long long r, char *out, size_t len) {
    size_t used = 0;
    out[0] = '\0';
    if (r == 0) {
        snprintf(out, len, "none");
        return;
    }
    for (int bit = 0; bit < 64; bit++) {
        unsigned long long m = 1ull << bit;
        if (!(r & m)) continue;
        const char *name = NULL;
        char other[16];
        for (size_t i = 0; i < sizeof g_reasons / sizeof g_reasons[0]; i++)
            if (g_reasons[i].bit == m) name = g_reasons[i].name;
        if (!name) { /* a reason newer than this table */
            snprintf(other, sizeof other, "bit%d", bit);
            name = other;
        }
        int w = snprintf(out + used, len - used, "%s%s", used ? "," : "", name);
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
}

/* The NVML device with this UUID; CUDA and NVML number devices differently
 * (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), so the index cannot be used. */
static nvml_device nvml_find(const nvml_api *nv, const char *uuid) {
    unsigned n = 0;
    if (!nv->h || !nv->count || !nv->handle || !nv->uuid || !uuid[0] || nv->count(&n) != 0)
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        nvml_device d = NULL;
        char u[NVML_BUF] = "";
        if (nv->handle(i, &d) == 0 && nv->uuid(d, u, sizeof u) == 0 && strcmp(u, uuid) == 0)
            return d;
    }
    return NULL;
}

static void nvml_fill(const nvml_api *nv, nvml_device d, gt_env_gpu *g) {
    unsigned v = 0;
    if (nv->clock && nv->clock(d, NVML_CLOCK_SM, &v) == 0) g->sm_clock_mhz = (int)v;
    if (nv->clock && nv->clock(d, NVML_CLOCK_MEM, &v) == 0) g->mem_clock_mhz = (int)v;
    if (nv->max_clock && nv->max_clock(d, NVML_CLOCK_SM, &v) == 0) g->sm_clock_max_mhz = (int)v;
    if (nv->max_clock && nv->max_clock(d, NVML_CLOCK_MEM, &v) == 0) g->mem_clock_max_mhz = (int)v;
    if (nv->temp && nv->temp(d, NVML_TEMPERATURE_GPU, &v) == 0) g->temperature_c = (int)v;
    if (nv->power && nv->power(d, &v) == 0) g->power_w = v / 1000.0;
    nvml_memory m;
    if (nv->memory && nv->memory(d, &m) == 0) {
        g->memory_used_mib = (long long)(m.used >> 20);
        if (g->memory_total_mib < 0) g->memory_total_mib = (long long)(m.total >> 20);
    }
    unsigned long long r = 0;
    if (nv->reasons && nv->reasons(d, &r) == 0) {
        g->has_throttle = 1;
        g->throttle_reasons = r;
        decode_reasons(r, g->throttle_names, sizeof g->throttle_names);
    }
    if (!g->name[0] && nv->name) nv->name(d, g->name, sizeof g->name);
}

static void nvml_open(nvml_api *nv, char *driver, size_t len) {
    static const char *const names[] = {"libnvidia-ml.so.1"};
    char path[160], why[160];
    memset(nv, 0, sizeof *nv);
    /* by name only: NVML comes with the driver, never with a toolkit or wheel */
    void *h = lib_open(names, 1, NULL, path, sizeof path, why, sizeof why);
    if (!h) return;
    nvml_void_fn init = NULL;
    SYM(init, h, "nvmlInit_v2");
    if (!init || init() != 0) return; /* kept loaded: see the note on libcuda */
    nv->h = h;
    nvml_str_fn drv = NULL;
    SYM(drv, h, "nvmlSystemGetDriverVersion");
    if (drv && drv(driver, (unsigned)len) != 0) driver[0] = '\0';
    SYM(nv->count, h, "nvmlDeviceGetCount_v2");
    SYM(nv->handle, h, "nvmlDeviceGetHandleByIndex_v2");
    SYM(nv->name, h, "nvmlDeviceGetName");
    SYM(nv->uuid, h, "nvmlDeviceGetUUID");
    SYM(nv->clock, h, "nvmlDeviceGetClockInfo");
    SYM(nv->max_clock, h, "nvmlDeviceGetMaxClockInfo");
    SYM(nv->temp, h, "nvmlDeviceGetTemperature");
    SYM(nv->power, h, "nvmlDeviceGetPowerUsage");
    /* renamed in R535; older drivers have only the Throttle name */
    SYM(nv->reasons, h, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!nv->reasons) SYM(nv->reasons, h, "nvmlDeviceGetCurrentClocksThrottleReasons");
    SYM(nv->memory, h, "nvmlDeviceGetMemoryInfo");
}

static void probe_driver(gt_env *e) {
    static const char *const names[] = {"libcuda.so.1"};
    char path[160], why[160];
    /* By name only: libcuda must match the kernel module, so a copy found
     * in a toolkit folder (stubs/, compat/) is the wrong one. Without it we
     * stop here, before NVML and cuInit: this is the fast path of every
     * machine without a GPU. */
    void *h = lib_open(names, 1, NULL, path, sizeof path, why, sizeof why);
    if (!h) {
        absent(e->cuda_driver, sizeof e->cuda_driver, why);
        return;
    }
    /* libcuda is never dlclosed: after cuInit the driver runs threads in its
     * own code, and a CUDA backend in this process shares the same copy. */
    cu_int_fn driver_version = NULL, device_count = NULL;
    cu_init_fn init = NULL;
    SYM(driver_version, h, "cuDriverGetVersion");
    SYM(init, h, "cuInit");
    SYM(device_count, h, "cuDeviceGetCount");
    int cuda_v = 0;
    char api[32] = "";
    if (driver_version && driver_version(&cuda_v) == 0 && cuda_v > 0)
        snprintf(api, sizeof api, "CUDA %d.%d", cuda_v / 1000, (cuda_v % 1000) / 10);

    nvml_api nv;
    char drv[80] = "";
    nvml_open(&nv, drv, sizeof drv);

    /* "580.65.06, CUDA 13.0 (path)"; a driver that loads but cannot start
     * (no device visible, kernel module mismatch) says so with the error code */
    int n = 0, init_rc = init ? init(0) : -1;
    char note[48] = "";
    if (!init)
        snprintf(note, sizeof note, "no cuInit");
    else if (init_rc != 0)
        snprintf(note, sizeof note, "cuInit error %d", init_rc);
    else if (!device_count || device_count(&n) != 0)
        n = 0;
    const char *parts[3] = {drv, api, note};
    size_t used = 0;
    e->cuda_driver[0] = '\0';
    for (int i = 0; i < 3; i++) {
        if (!parts[i][0]) continue;
        int w = snprintf(e->cuda_driver + used, sizeof e->cuda_driver - used, "%s%s",
                         used ? ", " : "", parts[i]);
        if (w > 0 && (size_t)w < sizeof e->cuda_driver - used) used += (size_t)w;
    }
    snprintf(e->cuda_driver + used, sizeof e->cuda_driver - used, "%s(%s)", used ? " " : "",
             path);

    cu_device_get_fn device_get = NULL;
    cu_name_fn name = NULL;
    cu_uuid_fn uuid = NULL;
    cu_attr_fn attr = NULL;
    cu_total_mem_fn total_mem = NULL;
    SYM(device_get, h, "cuDeviceGet");
    SYM(name, h, "cuDeviceGetName");
    /* The original cuDeviceGetUuid gives the physical GPU's UUID (what
     * NVML lists); _v2 gives a MIG instance's, and is the only one some
     * future driver may keep. */
    SYM(uuid, h, "cuDeviceGetUuid");
    if (!uuid) SYM(uuid, h, "cuDeviceGetUuid_v2");
    SYM(attr, h, "cuDeviceGetAttribute");
    /* _v2 takes size_t; the unsuffixed symbol is the 32-bit CUDA 3.1 one */
    SYM(total_mem, h, "cuDeviceTotalMem_v2");
    for (int i = 0; i < n && e->n_gpus < GT_ENV_MAX_GPUS; i++) {
        int dev = i, v = 0;
        if (device_get && device_get(&dev, i) != 0) continue;
        gt_env_gpu *g = &e->gpus[e->n_gpus++];
        *g = (gt_env_gpu){.index = i, .sm_count = -1, .cc_major = -1, .cc_minor = -1,
                          .sm_clock_max_mhz = -1, .mem_clock_max_mhz = -1,
                          .memory_total_mib = -1, .sm_clock_mhz = -1, .mem_clock_mhz = -1,
                          .memory_used_mib = -1, .temperature_c = -1, .power_w = -1};
        if (name && name(g->name, (int)sizeof g->name, dev) != 0) g->name[0] = '\0';
        unsigned char u[16];
        if (uuid && uuid(u, dev) == 0) format_uuid(u, g->uuid, sizeof g->uuid);
        if (attr && attr(&v, CU_ATTR_MULTIPROCESSOR_COUNT, dev) == 0) g->sm_count = v;
        if (attr && attr(&v, CU_ATTR_CC_MAJOR, dev) == 0) g->cc_major = v;
        if (attr && attr(&v, CU_ATTR_CC_MINOR, dev) == 0) g->cc_minor = v;
        size_t bytes = 0;
        if (total_mem && total_mem(&bytes, dev) == 0) g->memory_total_mib = (long long)(bytes >> 20);
        nvml_device nd = nvml_find(&nv, g->uuid);
        if (nd) nvml_fill(&nv, nd, g);
        /* CUDA's clock attributes are the maximum clocks in kHz: the fallback
         * without NVML (deprecated in CUDA 13, so they may fail) */
        if (g->sm_clock_max_mhz < 0 && attr && attr(&v, CU_ATTR_CLOCK_RATE, dev) == 0 && v > 0)
            g->sm_clock_max_mhz = v / 1000;
        if (g->mem_clock_max_mhz < 0 && attr && attr(&v, CU_ATTR_MEMORY_CLOCK_RATE, dev) == 0 &&
            v > 0)
            g->mem_clock_max_mhz = v / 1000;
    }
    if (nv.h) {
        nvml_void_fn shutdown = NULL;
        SYM(shutdown, nv.h, "nvmlShutdown");
        if (shutdown) shutdown();
    }
}

/* Whether cuBLASLt's version is read. Opening the library costs a third of a
 * second (its relocations and constructors), more than the rest of the
 * fingerprint together; on a host without a CUDA device nothing runs on it,
 * so a run there leaves it unread, unless this process has it loaded already
 * or the caller asks (GT_ENV_ALL_LIBS). */
static int cublaslt_wanted(const gt_env *e, unsigned flags) {
    if (e->n_gpus > 0 || (flags & GT_ENV_ALL_LIBS)) return 1;
    for (size_t i = 0; i < sizeof cublaslt_names / sizeof cublaslt_names[0]; i++) {
        void *h = dlopen(cublaslt_names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            return 1;
        }
    }
    return 0;
}

void gt_env_collect_gpu(gt_env *e, unsigned flags) {
    e->n_gpus = 0;
    probe_driver(e);
    if (GT_CUDA_EMULATOR) {
        /* The cuda backend runs on the CPU emulator with gauntlet's stand-ins:
         * the host's CUDA libraries, if any, play no part (cuda-emulator.md). */
        snprintf(e->cuda_runtime, sizeof e->cuda_runtime, "emulated (gauntlet's CPU emulator)");
        snprintf(e->cublas, sizeof e->cublas, "emulated (gauntlet stand-in)");
        snprintf(e->cudnn, sizeof e->cudnn,
                 "emulated (gauntlet stand-in: convolutions, graph interpreter)");
        snprintf(e->nccl, sizeof e->nccl, "emulated (gauntlet stand-in: one rank per process)");
        return;
    }
    lib_dirs dirs = {0};
    probe_version_lib(LIB_CUDART, &dirs, e->cuda_runtime, sizeof e->cuda_runtime);
    if (cublaslt_wanted(e, flags))
        probe_version_lib(LIB_CUBLASLT, &dirs, e->cublas, sizeof e->cublas);
    else
        snprintf(e->cublas, sizeof e->cublas,
                 "not read: no CUDA device here, nothing runs on it (gauntlet env reads it)");
    probe_version_lib(LIB_CUDNN, &dirs, e->cudnn, sizeof e->cudnn);
    probe_version_lib(LIB_NCCL, &dirs, e->nccl, sizeof e->nccl);
    dirs_free(&dirs);
}

/* ---- per-case telemetry ----------------------------------------------------------
 * The fingerprint above loads and releases everything each time; telemetry
 * reads the same GPU around every case, so its libraries stay loaded and
 * the CUDA-ordinal-to-NVML match is made once per device. */

static struct {
    pthread_once_t once;
    int ok;                /* libcuda and NVML loaded and started */
    int cu_ok;             /* libcuda started (gt_env_gpu_identity needs only it) */
    int count;             /* CUDA devices visible */
    cu_device_get_fn device_get;
    cu_uuid_fn uuid;
    cu_name_fn name;
    cu_pci_fn pci;
    nvml_api nv;
    int resolved[GT_ENV_MAX_GPUS]; /* 1 matched, -1 no match, 0 not tried */
    nvml_device dev[GT_ENV_MAX_GPUS];
    char uuids[GT_ENV_MAX_GPUS][48];
} g_tel = {.once = PTHREAD_ONCE_INIT};

static void telemetry_open(void) {
    static const char *const names[] = {"libcuda.so.1"};
    char path[160], why[160], drv[80];
    /* by name only, as probe_driver: never a toolkit's stub */
    void *h = lib_open(names, 1, NULL, path, sizeof path, why, sizeof why);
    if (!h) return;
    cu_init_fn init = NULL;
    cu_int_fn device_count = NULL;
    SYM(init, h, "cuInit");
    SYM(device_count, h, "cuDeviceGetCount");
    SYM(g_tel.device_get, h, "cuDeviceGet");
    SYM(g_tel.uuid, h, "cuDeviceGetUuid");
    if (!g_tel.uuid) SYM(g_tel.uuid, h, "cuDeviceGetUuid_v2");
    SYM(g_tel.name, h, "cuDeviceGetName");
    SYM(g_tel.pci, h, "cuDeviceGetPCIBusId");
    if (!init || !device_count || !g_tel.device_get || !g_tel.uuid || init(0) != 0 ||
        device_count(&g_tel.count) != 0 || g_tel.count <= 0)
        return; /* libcuda stays loaded: see probe_driver */
    g_tel.cu_ok = 1;
    nvml_open(&g_tel.nv, drv, sizeof drv); /* NVML's init is counted: never shut down here */
    g_tel.ok = g_tel.nv.h != NULL && g_tel.nv.clock != NULL;
}

int gt_env_gpu_sample(int cuda_index, gt_gpu_sample *out) {
    pthread_once(&g_tel.once, telemetry_open);
    if (!out || !g_tel.ok) return 0;
    int local = gt_env_local_rank();
    int i = cuda_index >= 0 ? cuda_index : (local < 0 ? 0 : local) % g_tel.count;
    if (i >= g_tel.count || i >= GT_ENV_MAX_GPUS) return 0;
    if (!g_tel.resolved[i]) {
        int dev = 0;
        unsigned char u[16];
        g_tel.resolved[i] = -1;
        if (g_tel.device_get(&dev, i) == 0 && g_tel.uuid(u, dev) == 0) {
            format_uuid(u, g_tel.uuids[i], sizeof g_tel.uuids[i]);
            g_tel.dev[i] = nvml_find(&g_tel.nv, g_tel.uuids[i]);
            if (g_tel.dev[i]) g_tel.resolved[i] = 1;
        }
    }
    if (g_tel.resolved[i] != 1) return 0;
    const nvml_api *nv = &g_tel.nv;
    nvml_device d = g_tel.dev[i];
    *out = (gt_gpu_sample){.index = i, .t_unix = gt_wall_time(), .sm_clock_mhz = -1,
                           .mem_clock_mhz = -1, .temperature_c = -1, .power_w = -1};
    copy_str(out->uuid, sizeof out->uuid, g_tel.uuids[i]);
    unsigned v = 0;
    if (nv->clock(d, NVML_CLOCK_SM, &v) == 0) out->sm_clock_mhz = (int)v;
    if (nv->clock(d, NVML_CLOCK_MEM, &v) == 0) out->mem_clock_mhz = (int)v;
    if (nv->temp && nv->temp(d, NVML_TEMPERATURE_GPU, &v) == 0) out->temperature_c = (int)v;
    if (nv->power && nv->power(d, &v) == 0) out->power_w = v / 1000.0;
    unsigned long long r = 0;
    if (nv->reasons && nv->reasons(d, &r) == 0) {
        out->has_throttle = 1;
        out->throttle_reasons = r;
        decode_reasons(r, out->throttle_names, sizeof out->throttle_names);
    }
    return 1;
}

int gt_env_gpu_identity(int cuda_index, gt_gpu_identity *out) {
    pthread_once(&g_tel.once, telemetry_open);
    if (!out) return 0;
    *out = (gt_gpu_identity){.index = -1};
    if (!g_tel.cu_ok) return 0;
    int local = gt_env_local_rank();
    int i = cuda_index >= 0 ? cuda_index : (local < 0 ? 0 : local) % g_tel.count;
    int dev = 0;
    if (i >= g_tel.count || g_tel.device_get(&dev, i) != 0) return 0;
    out->index = i;
    unsigned char u[16];
    if (g_tel.uuid(u, dev) == 0) format_uuid(u, out->uuid, sizeof out->uuid);
    if (g_tel.name && g_tel.name(out->name, (int)sizeof out->name, dev) != 0) out->name[0] = '\0';
    if (g_tel.pci && g_tel.pci(out->pci_bus_id, (int)sizeof out->pci_bus_id, dev) != 0)
        out->pci_bus_id[0] = '\0';
    return 1;
}
