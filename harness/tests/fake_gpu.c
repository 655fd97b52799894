/* A stand-in for the driver's libcuda.so.1 and libnvidia-ml.so.1, for the
 * telemetry test on machines without a GPU (harness/tests/telemetry.sh): one
 * device whose UUID both libraries agree on, and NVML readings that change
 * with every call (the SM clock goes up by 1 MHz per reading), so a test can
 * tell a case's start reading from its end. Only the entry points gauntlet's
 * dlopen code calls exist; the rest it finds missing and does without.
 * Built twice, as both file names; never installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static const unsigned char k_uuid[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                         0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
static unsigned g_readings;

/* libcuda */
EXPORT int cuInit(unsigned flags);
EXPORT int cuDriverGetVersion(int *v);
EXPORT int cuDeviceGetCount(int *n);
EXPORT int cuDeviceGet(int *dev, int ordinal);
EXPORT int cuDeviceGetUuid(unsigned char uuid[16], int dev);
EXPORT int cuDeviceGetName(char *name, int len, int dev);
EXPORT int cuDeviceGetPCIBusId(char *bus, int len, int dev);
int cuInit(unsigned flags) {
    return flags == 0 ? 0 : 1;
}
int cuDriverGetVersion(int *v) {
    *v = 13000;
    return 0;
}
int cuDeviceGetCount(int *n) {
    *n = 1;
    return 0;
}
int cuDeviceGet(int *dev, int ordinal) {
    *dev = ordinal;
    return ordinal == 0 ? 0 : 101;
}
int cuDeviceGetUuid(unsigned char uuid[16], int dev) {
    if (dev != 0) return 101;
    memcpy(uuid, k_uuid, 16);
    return 0;
}

int cuDeviceGetName(char *name, int len, int dev) {
    if (dev != 0) return 101;
    snprintf(name, (size_t)len, "Fake GPU");
    return 0;
}
int cuDeviceGetPCIBusId(char *bus, int len, int dev) {
    if (dev != 0) return 101;
    snprintf(bus, (size_t)len, "0000:1B:00.0");
    return 0;
}

/* libnvidia-ml */
EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT int nvmlSystemGetDriverVersion(char *buf, unsigned len);
EXPORT int nvmlDeviceGetCount_v2(unsigned *n);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev);
EXPORT int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len);
EXPORT int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz);
EXPORT int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c);
EXPORT int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw);
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r);
int nvmlInit_v2(void) {
    return 0;
}
int nvmlShutdown(void) {
    return 0;
}
int nvmlSystemGetDriverVersion(char *buf, unsigned len) {
    snprintf(buf, len, "999.99-fake");
    return 0;
}
int nvmlDeviceGetCount_v2(unsigned *n) {
    *n = 1;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev) {
    *dev = (void *)&g_readings;
    return i == 0 ? 0 : 2;
}
int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len) {
    (void)dev;
    const unsigned char *b = k_uuid;
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return 0;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz) {
    (void)dev;
    if (type == 1)
        *mhz = 1400 + g_readings++; /* SM: one step per reading */
    else
        *mhz = 2619;
    return 0;
}
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c) {
    (void)dev;
    (void)sensor;
    *c = 45;
    return 0;
}
int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw) {
    (void)dev;
    *mw = 250500;
    return 0;
}
/* FAKE_GPU_THROTTLE (hex or decimal) replaces the reasons, so that a test
 * can throttle one rank's GPU (harness/tests/doctor.sh) */
int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r) {
    (void)dev;
    const char *v = getenv("FAKE_GPU_THROTTLE");
    *r = v && *v ? strtoull(v, NULL, 0) : 0x4;
    return 0;
}
