/* cuda_abi_check.c — runtime/cuda_abi.h against the toolkit's cuda.h. Compiled twice by
 * cuda_abi.cmake (the test runtime.cuda_abi): with -DTILEC_NO_CUDA_H (tilec's header) and without
 * (cuda.h and cudaTypedefs.h). Each build prints every constant's value, every type's size,
 * alignment and signedness, every field's offset and size, and the symbol each linked name maps
 * to; the test requires the two outputs to be the same. Function types cannot be printed: each
 * build asserts that each one is compatible with the signature written here (_Generic compares
 * types as the compiler does), so a wrong parameter stops one of the two builds, and a signature
 * written wrong here stops the cuda.h one. */
#ifdef TILEC_NO_CUDA_H
#include "cuda_abi.h"
#else
#include <cuda.h>
#include <cudaTypedefs.h>
#endif
#include <stddef.h>
#include <stdio.h>

#define CONSTANTS(X)                                                                                                  \
    X(CUDA_SUCCESS) X(CUDA_ERROR_INVALID_VALUE) X(CUDA_ERROR_OUT_OF_MEMORY) X(CUDA_ERROR_NO_DEVICE)                \
    X(CUDA_ERROR_INVALID_DEVICE) X(CUDA_ERROR_INVALID_IMAGE) X(CUDA_ERROR_INVALID_CONTEXT) X(CUDA_ERROR_INVALID_PTX) \
    X(CUDA_ERROR_INVALID_HANDLE) X(CUDA_ERROR_NOT_FOUND) X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)                     \
    X(CUDA_ERROR_LAUNCH_FAILED) X(CUDA_ERROR_INVALID_CLUSTER_SIZE) X(CUDA_ERROR_UNKNOWN)                           \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)                     \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)        \
    X(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) X(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)       \
    X(CU_JIT_ERROR_LOG_BUFFER) X(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) X(CU_JIT_INPUT_PTX)                           \
    X(CU_LAUNCH_ATTRIBUTE_COOPERATIVE) X(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)                                     \
    X(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) X(CU_GET_PROC_ADDRESS_DEFAULT)                         \
    X(CU_GET_PROC_ADDRESS_SUCCESS) X(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)                                          \
    X(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) X(CU_STREAM_NON_BLOCKING)

/* integer and enumeration types: size, alignment, signedness */
#define SCALARS(X)                                                                                                    \
    X(cuuint64_t) X(CUdevice) X(CUdeviceptr) X(CUresult) X(CUdevice_attribute) X(CUfunction_attribute)            \
    X(CUjit_option) X(CUjitInputType) X(CUlaunchAttributeID) X(CUdriverProcAddress_flags)                           \
    X(CUdriverProcAddressQueryResult) X(CUstream_flags)

/* handles and aggregates: size, alignment */
#define OBJECTS(X)                                                                                                    \
    X(CUcontext) X(CUmodule) X(CUfunction) X(CUstream) X(CUlinkState) X(CUlaunchAttributeValue)                    \
    X(CUlaunchAttribute) X(CUlaunchConfig)

/* (handle, the struct it points to): the tags are cuda.h's, which the fake driver relies on */
#define HANDLES(X)                                                                                                    \
    X(CUcontext, CUctx_st) X(CUmodule, CUmod_st) X(CUfunction, CUfunc_st) X(CUstream, CUstream_st)                 \
    X(CUlinkState, CUlinkState_st)

/* (aggregate, field, the field's type): offset and size printed, the type asserted (an array's
 * as the pointer it decays to) */
#define FIELDS(X)                                                                                                     \
    X(CUlaunchAttributeValue, pad, char *)                                                                          \
    X(CUlaunchAttributeValue, cooperative, int)                                                                     \
    X(CUlaunchAttributeValue, clusterDim.x, unsigned int)                                                           \
    X(CUlaunchAttributeValue, clusterDim.y, unsigned int)                                                           \
    X(CUlaunchAttributeValue, clusterDim.z, unsigned int)                                                           \
    X(CUlaunchAttributeValue, programmaticStreamSerializationAllowed, int)                                          \
    X(CUlaunchAttribute, id, CUlaunchAttributeID)                                                                   \
    X(CUlaunchAttribute, pad, char *)                                                                               \
    X(CUlaunchAttribute, value, CUlaunchAttributeValue)                                                             \
    X(CUlaunchConfig, gridDimX, unsigned int)                                                                       \
    X(CUlaunchConfig, gridDimY, unsigned int)                                                                       \
    X(CUlaunchConfig, gridDimZ, unsigned int)                                                                       \
    X(CUlaunchConfig, blockDimX, unsigned int)                                                                      \
    X(CUlaunchConfig, blockDimY, unsigned int)                                                                      \
    X(CUlaunchConfig, blockDimZ, unsigned int)                                                                      \
    X(CUlaunchConfig, sharedMemBytes, unsigned int)                                                                 \
    X(CUlaunchConfig, hStream, CUstream)                                                                            \
    X(CUlaunchConfig, attrs, CUlaunchAttribute *)                                                                   \
    X(CUlaunchConfig, numAttrs, unsigned int)

/* the pointer types of the entry points the runtime takes from cuGetProcAddress, with the
 * signatures of the Driver API reference */
#define POINTERS(X)                                                                                                   \
    X(PFN_cuGetProcAddress_v12000, (const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))      \
    X(PFN_cuGetErrorName_v6000, (CUresult, const char **))                                                          \
    X(PFN_cuGetErrorString_v6000, (CUresult, const char **))                                                        \
    X(PFN_cuInit_v2000, (unsigned int))                                                                             \
    X(PFN_cuDriverGetVersion_v2020, (int *))                                                                        \
    X(PFN_cuDeviceGet_v2000, (CUdevice *, int))                                                                     \
    X(PFN_cuDeviceGetAttribute_v2000, (int *, CUdevice_attribute, CUdevice))                                        \
    X(PFN_cuDevicePrimaryCtxRetain_v7000, (CUcontext *, CUdevice))                                                  \
    X(PFN_cuDevicePrimaryCtxRelease_v11000, (CUdevice))                                                             \
    X(PFN_cuCtxGetCurrent_v4000, (CUcontext *))                                                                     \
    X(PFN_cuCtxSetCurrent_v4000, (CUcontext))                                                                       \
    X(PFN_cuCtxGetDevice_v2000, (CUdevice *))                                                                       \
    X(PFN_cuCtxPushCurrent_v4000, (CUcontext))                                                                      \
    X(PFN_cuCtxPopCurrent_v4000, (CUcontext *))                                                                     \
    X(PFN_cuModuleLoadData_v2000, (CUmodule *, const void *))                                                       \
    X(PFN_cuModuleUnload_v2000, (CUmodule))                                                                         \
    X(PFN_cuModuleGetFunction_v2000, (CUfunction *, CUmodule, const char *))                                        \
    X(PFN_cuFuncSetAttribute_v9000, (CUfunction, CUfunction_attribute, int))                                        \
    X(PFN_cuLaunchKernel_v4000, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,  \
                                 unsigned int, unsigned int, CUstream, void **, void **))                           \
    X(PFN_cuLaunchKernelEx_v11060, (const CUlaunchConfig *, CUfunction, void **, void **))                          \
    X(PFN_cuLinkCreate_v6050, (unsigned int, CUjit_option *, void **, CUlinkState *))                               \
    X(PFN_cuLinkAddData_v6050, (CUlinkState, CUjitInputType, void *, size_t, const char *, unsigned int,            \
                                CUjit_option *, void **))                                                           \
    X(PFN_cuLinkComplete_v5050, (CUlinkState, void **, size_t *))                                                   \
    X(PFN_cuLinkDestroy_v5050, (CUlinkState))

/* the functions a program that links libcuda calls (the example): the symbol each name maps to
 * is printed, its type asserted */
#define LINKED(X)                                                                                                     \
    X(cuGetErrorName, (CUresult, const char **))                                                                    \
    X(cuMemAlloc, (CUdeviceptr *, size_t))                                                                          \
    X(cuMemFree, (CUdeviceptr))                                                                                     \
    X(cuMemcpyHtoD, (CUdeviceptr, const void *, size_t))                                                            \
    X(cuMemcpyDtoH, (void *, CUdeviceptr, size_t))                                                                  \
    X(cuMemsetD8, (CUdeviceptr, unsigned char, size_t))                                                             \
    X(cuStreamCreate, (CUstream *, unsigned int))                                                                   \
    X(cuStreamSynchronize, (CUstream))                                                                              \
    X(cuStreamDestroy, (CUstream))

#define HANDLE_TYPE(handle, tag)                                                                                      \
    _Static_assert(_Generic((handle)0, struct tag *: 1, default: 0), #handle " is not struct " #tag " *");
HANDLES(HANDLE_TYPE)

#define FIELD_TYPE(agg, field, type)                                                                                  \
    _Static_assert(_Generic(((agg *)0)->field, type: 1, default: 0), #agg "." #field " is not " #type);
FIELDS(FIELD_TYPE)

#define POINTER_TYPE(pfn, params)                                                                                     \
    _Static_assert(_Generic((pfn)0, CUresult(*) params: 1, default: 0), #pfn " is not CUresult (*)" #params);
POINTERS(POINTER_TYPE)

#define LINKED_TYPE(name, params)                                                                                     \
    _Static_assert(_Generic(&name, CUresult(*) params: 1, default: 0), #name " is not CUresult " #params);
LINKED(LINKED_TYPE)

#define STR_(x) #x
#define STR(x) STR_(x)

int main(void)
{
#define CONSTANT(name) printf("value %s %lld\n", #name, (long long)(name));
    CONSTANTS(CONSTANT)
#define SCALAR(type)                                                                                                  \
    printf("type %s size %zu align %zu %s\n", #type, sizeof(type), _Alignof(type),                                  \
           (type)-1 > (type)0 ? "unsigned" : "signed");
    SCALARS(SCALAR)
#define OBJECT(type) printf("type %s size %zu align %zu\n", #type, sizeof(type), _Alignof(type));
    OBJECTS(OBJECT)
#define FIELD(agg, field, type)                                                                                       \
    printf("field %s.%s offset %zu size %zu\n", #agg, #field, offsetof(agg, field), sizeof(((agg *)0)->field));
    FIELDS(FIELD)
#define POINTER(pfn, params) printf("pointer %s size %zu\n", #pfn, sizeof(pfn));
    POINTERS(POINTER)
#define LINKED_NAME(name, params) printf("symbol %s %s\n", #name, STR(name));
    LINKED(LINKED_NAME)
    return 0;
}
