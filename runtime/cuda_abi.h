/* cuda_abi.h — tilec's own declarations of the part of the CUDA Driver API that tilec uses, for a
 * machine without the CUDA toolkit: the runtime takes every entry point from libcuda through dlopen
 * and cuGetProcAddress, so it needs the driver's types, values and signatures at build time and
 * nothing else. Included instead of <cuda.h> and <cudaTypedefs.h> where TILEC_NO_CUDA_H is defined
 * (CMake defines it when it finds no cuda.h).
 *
 * Every value, layout and signature here is the driver's ABI as documented for CUDA 12 and 13
 * (values never change once published; entry points are versioned instead), and the test
 * runtime.cuda_abi (tests/runtime/cuda_abi_check.c) compares each name here with cuda.h wherever
 * the toolkit is present. A name added here goes into that check too; the test fails on a name it
 * does not check. Enumerations list only the values tilec uses: the driver may return others
 * (a CUresult is printed by number when cuGetErrorName does not know it). */
#ifndef TILEC_CUDA_ABI_H
#define TILEC_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The driver's calling convention is the platform's (cuda.h's CUDAAPI is empty off Windows). */

typedef uint64_t cuuint64_t;

/* ---- handles and scalars ---- */
typedef int CUdevice; /* an ordinal */
#if defined(__LP64__) || defined(_WIN64)
typedef unsigned long long CUdeviceptr; /* the 64-bit (_v2) memory API */
#else
typedef unsigned int CUdeviceptr;
#endif
/* opaque: only pointers to them cross the API (the fake driver of the tests defines CUctx_st) */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUlinkState_st *CUlinkState;

/* ---- results: the ones tilec (and its fake driver) names ---- */
typedef enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

/* ---- what the runtime asks of a device and sets on a function ---- */
typedef enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
} CUdevice_attribute;

typedef enum {
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
} CUfunction_attribute;

/* ---- the linker (PTX to cubin without ptxas) ---- */
typedef enum {
    CU_JIT_ERROR_LOG_BUFFER = 5,           /* value: a char buffer */
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 /* value: its size, cast to a pointer */
} CUjit_option;

typedef enum {
    CU_JIT_INPUT_PTX = 1
} CUjitInputType;

/* ---- cuLaunchKernelEx ---- */
typedef enum {
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
} CUlaunchAttributeID;

/* 64 bytes whatever the attribute, aligned as the pointers some of the driver's members hold; the
 * members are the ones tilec sets */
typedef union {
    _Alignas(void *) char pad[64];
    int cooperative;
    struct {
        unsigned int x, y, z;
    } clusterDim;
    int programmaticStreamSerializationAllowed;
} CUlaunchAttributeValue;

typedef struct {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)]; /* the value starts at byte 8 */
    CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

/* ---- cuGetProcAddress ---- */
typedef enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0
} CUdriverProcAddress_flags;

typedef enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

/* cuStreamCreate's flags */
typedef enum {
    CU_STREAM_NON_BLOCKING = 1
} CUstream_flags;

/* ---- the entry points, as cuGetProcAddress returns them: PFN_NAME_vVERSION is NAME as of CUDA
 * VERSION (major * 1000 + minor * 10), the version the runtime asks for ---- */
typedef CUresult (*PFN_cuGetProcAddress_v12000)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                                CUdriverProcAddressQueryResult *symbolStatus);
typedef CUresult (*PFN_cuGetErrorName_v6000)(CUresult error, const char **name);
typedef CUresult (*PFN_cuGetErrorString_v6000)(CUresult error, const char **text);
typedef CUresult (*PFN_cuInit_v2000)(unsigned int flags);
typedef CUresult (*PFN_cuDriverGetVersion_v2020)(int *version);
typedef CUresult (*PFN_cuDeviceGet_v2000)(CUdevice *device, int ordinal);
typedef CUresult (*PFN_cuDeviceGetAttribute_v2000)(int *value, CUdevice_attribute attribute, CUdevice device);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain_v7000)(CUcontext *ctx, CUdevice device);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease_v11000)(CUdevice device);
typedef CUresult (*PFN_cuCtxGetCurrent_v4000)(CUcontext *ctx);
typedef CUresult (*PFN_cuCtxSetCurrent_v4000)(CUcontext ctx);
typedef CUresult (*PFN_cuCtxGetDevice_v2000)(CUdevice *device);
typedef CUresult (*PFN_cuCtxPushCurrent_v4000)(CUcontext ctx);
typedef CUresult (*PFN_cuCtxPopCurrent_v4000)(CUcontext *ctx);
typedef CUresult (*PFN_cuModuleLoadData_v2000)(CUmodule *module, const void *image);
typedef CUresult (*PFN_cuModuleUnload_v2000)(CUmodule module);
typedef CUresult (*PFN_cuModuleGetFunction_v2000)(CUfunction *function, CUmodule module, const char *name);
typedef CUresult (*PFN_cuFuncSetAttribute_v9000)(CUfunction function, CUfunction_attribute attribute, int value);
typedef CUresult (*PFN_cuLaunchKernel_v4000)(CUfunction function, unsigned int gridDimX, unsigned int gridDimY,
                                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream stream,
                                             void **kernelParams, void **extra);
typedef CUresult (*PFN_cuLaunchKernelEx_v11060)(const CUlaunchConfig *config, CUfunction function, void **kernelParams,
                                                void **extra);
typedef CUresult (*PFN_cuLinkCreate_v6050)(unsigned int numOptions, CUjit_option *options, void **optionValues,
                                           CUlinkState *state);
typedef CUresult (*PFN_cuLinkAddData_v6050)(CUlinkState state, CUjitInputType type, void *data, size_t size,
                                            const char *name, unsigned int numOptions, CUjit_option *options,
                                            void **optionValues);
typedef CUresult (*PFN_cuLinkComplete_v5050)(CUlinkState state, void **cubin, size_t *size);
typedef CUresult (*PFN_cuLinkDestroy_v5050)(CUlinkState state);

/* ---- what a program that links libcuda calls (runtime/examples/jit_transpose.c; the runtime
 * never does). The names are the symbols cuda.h maps them to: the 64-bit memory API and the
 * current cuStreamDestroy are the _v2 ones. The legacy default stream only: cuda.h's
 * CUDA_API_PER_THREAD_DEFAULT_STREAM maps some of these to other symbols, which this header
 * does not declare. ---- */
#define cuMemAlloc cuMemAlloc_v2
#define cuMemFree cuMemFree_v2
#define cuMemcpyHtoD cuMemcpyHtoD_v2
#define cuMemcpyDtoH cuMemcpyDtoH_v2
#define cuMemsetD8 cuMemsetD8_v2
#define cuStreamDestroy cuStreamDestroy_v2
CUresult cuGetErrorName(CUresult error, const char **name);
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemFree(CUdeviceptr dptr);
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t count);
CUresult cuStreamCreate(CUstream *stream, unsigned int flags);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuStreamDestroy(CUstream stream);

#endif
