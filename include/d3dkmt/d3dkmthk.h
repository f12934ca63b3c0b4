/*
 * d3dkmt/d3dkmthk.h - the D3DKMT thunks over vidmm (libvidmm-d3dkmt).
 *
 * The functions a Wine- or ReactOS-style graphics layer calls to reach
 * the kernel's graphics subsystem (D3DKMTCreateDevice, D3DKMTMakeResident,
 * ...), with the structures Microsoft documents for them: the same
 * names, the same members in the same order, the same types (UINT and
 * D3DKMT_HANDLE are 32 bits, LUID is {DWORD LowPart; LONG HighPart},
 * GPU virtual addresses are 64 bits).  docs/D3DKMT.md lists every thunk,
 * what it does here and the status it answers with.
 *
 * This header stands in for the Windows SDK's d3dkmthk.h and
 * d3dukmdt.h: do not include it together with them (or with Wine's
 * ddk/d3dkmthk.h); it defines the same names.  It defines only the
 * subset of those headers that libvidmm-d3dkmt implements.  Targets are
 * LP64 hosts (x86-64, AArch64), where the documented D3DKMT_ALIGN64
 * padding is the natural alignment.
 *
 * Deviations forced by strict C11 (bit-fields may only be unsigned int
 * or int): the 64-bit bit-field union D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE
 * is written as 32-bit bit-fields over the low half of its UINT64 Value
 * (the same bits on a little-endian host).
 *
 * Per-process state.  Windows keeps the handle tables of a process in
 * the kernel; here they live in a thunk runtime (struct d3dkmt_runtime)
 * that the process opens first (d3dkmt_runtime_open), fills with
 * adapters (d3dkmt_runtime_add_adapter, or d3dkmt_runtime_add_softgpu
 * in <d3dkmt/softgpu.h>) and makes current for the process
 * (d3dkmt_runtime_make_current) or for one thread
 * (d3dkmt_runtime_bind_thread).  The thunks act on the calling thread's
 * runtime: its bound one, else the process's current one; with neither
 * they answer STATUS_INVALID_PARAMETER.  docs/DECISIONS.md D47.
 */
#ifndef D3DKMT_D3DKMTHK_H
#define D3DKMT_D3DKMTHK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Windows base types (LP64 sizes) -------------------------------- */

typedef void VOID;
typedef unsigned int UINT;
typedef int INT;
typedef int BOOL;
typedef unsigned char BOOLEAN;
typedef uint32_t UINT32;
typedef uint32_t ULONG;
typedef uint32_t DWORD;
typedef int32_t LONG;
typedef uint64_t UINT64;
typedef uint64_t ULONGLONG;
typedef uintptr_t ULONG_PTR;
typedef void *HANDLE;
typedef void *PVOID;

typedef LONG NTSTATUS;
#define NT_SUCCESS(status) (((NTSTATUS)(status)) >= 0)

typedef struct _LUID {
    DWORD LowPart;
    LONG HighPart;
} LUID;

typedef UINT D3DKMT_HANDLE;
typedef ULONGLONG D3DGPU_VIRTUAL_ADDRESS;
typedef ULONGLONG D3DGPU_SIZE_T;
typedef UINT D3DDDI_VIDEO_PRESENT_SOURCE_ID;
#define D3DGPU_NULL 0

/* ---- NTSTATUS values the thunks answer with ------------------------- */

#define STATUS_SUCCESS                          ((NTSTATUS)0x00000000)
#define STATUS_TIMEOUT                          ((NTSTATUS)0x00000102)
#define STATUS_PENDING                          ((NTSTATUS)0x00000103)
#define STATUS_DATATYPE_MISALIGNMENT            ((NTSTATUS)0x80000002)
#define STATUS_DEVICE_BUSY                      ((NTSTATUS)0x80000011)
#define STATUS_NO_MORE_ENTRIES                  ((NTSTATUS)0x8000001A)
#define STATUS_UNSUCCESSFUL                     ((NTSTATUS)0xC0000001)
#define STATUS_INVALID_HANDLE                   ((NTSTATUS)0xC0000008)
#define STATUS_INVALID_PARAMETER                ((NTSTATUS)0xC000000D)
#define STATUS_NO_MEMORY                        ((NTSTATUS)0xC0000017)
#define STATUS_BUFFER_TOO_SMALL                 ((NTSTATUS)0xC0000023)
#define STATUS_INTEGER_OVERFLOW                 ((NTSTATUS)0xC0000095)
#define STATUS_NOT_SUPPORTED                    ((NTSTATUS)0xC00000BB)
#define STATUS_INTERNAL_ERROR                   ((NTSTATUS)0xC00000E5)
#define STATUS_INVALID_DEVICE_STATE             ((NTSTATUS)0xC0000184)
#define STATUS_DEVICE_REMOVED                   ((NTSTATUS)0xC00002B6)
#define STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER ((NTSTATUS)0xC01E0001)
#define STATUS_GRAPHICS_INVALID_DRIVER_MODEL    ((NTSTATUS)0xC01E0004)
#define STATUS_GRAPHICS_NO_VIDEO_MEMORY         ((NTSTATUS)0xC01E0100)
#define STATUS_GRAPHICS_ALLOCATION_BUSY         ((NTSTATUS)0xC01E0102)
#define STATUS_GRAPHICS_TOO_MANY_REFERENCES     ((NTSTATUS)0xC01E0103)

/* ---- adapters -------------------------------------------------------- */

typedef struct _D3DKMT_ADAPTERINFO {
    D3DKMT_HANDLE hAdapter;
    LUID AdapterLuid;
    ULONG NumOfSources;
    BOOL bPrecisePresentRegionsPreferred;
} D3DKMT_ADAPTERINFO;

typedef struct _D3DKMT_ENUMADAPTERS2 {
    ULONG NumAdapters;
    D3DKMT_ADAPTERINFO *pAdapters;
} D3DKMT_ENUMADAPTERS2;

typedef struct _D3DKMT_OPENADAPTERFROMLUID {
    LUID AdapterLuid;
    D3DKMT_HANDLE hAdapter;
} D3DKMT_OPENADAPTERFROMLUID;

typedef struct _D3DKMT_CLOSEADAPTER {
    D3DKMT_HANDLE hAdapter;
} D3DKMT_CLOSEADAPTER;

typedef enum _KMTQUERYADAPTERINFOTYPE {
    KMTQAITYPE_UMDRIVERPRIVATE = 0,
    KMTQAITYPE_UMDRIVERNAME = 1,
    KMTQAITYPE_UMOPENGLINFO = 2,
    KMTQAITYPE_GETSEGMENTSIZE = 3,
    KMTQAITYPE_ADAPTERGUID = 4,
    KMTQAITYPE_FLIPQUEUEINFO = 5,
    KMTQAITYPE_ADAPTERADDRESS = 6,
    KMTQAITYPE_SETWORKINGSETINFO = 7,
    KMTQAITYPE_ADAPTERREGISTRYINFO = 8,
    KMTQAITYPE_CURRENTDISPLAYMODE = 9,
    KMTQAITYPE_MODELIST = 10,
    KMTQAITYPE_CHECKDRIVERUPDATESTATUS = 11,
    KMTQAITYPE_VIRTUALADDRESSINFO = 12,
    KMTQAITYPE_DRIVERVERSION = 13,
    KMTQAITYPE_ADAPTERTYPE = 15,
    KMTQAITYPE_OUTPUTDUPLCONTEXTSCOUNT = 16,
    KMTQAITYPE_WDDM_1_2_CAPS = 17,
    KMTQAITYPE_UMD_DRIVER_VERSION = 18,
    KMTQAITYPE_DIRECTFLIP_SUPPORT = 19,
    KMTQAITYPE_MULTIPLANEOVERLAY_SUPPORT = 20,
    KMTQAITYPE_DLIST_DRIVER_NAME = 21,
    KMTQAITYPE_WDDM_1_3_CAPS = 22,
    KMTQAITYPE_MULTIPLANEOVERLAY_HUD_SUPPORT = 23,
    KMTQAITYPE_WDDM_2_0_CAPS = 24,
    KMTQAITYPE_NODEMETADATA = 25,
    KMTQAITYPE_CPDRIVERNAME = 26,
    KMTQAITYPE_XBOX = 27,
    KMTQAITYPE_INDEPENDENTFLIP_SUPPORT = 28,
    KMTQAITYPE_MIRACASTCOMPANIONDRIVERNAME = 29,
    KMTQAITYPE_PHYSICALADAPTERCOUNT = 30,
    KMTQAITYPE_PHYSICALADAPTERDEVICEIDS = 31,
    KMTQAITYPE_DRIVERCAPS_EXT = 32,
    KMTQAITYPE_QUERY_MIRACAST_DRIVER_TYPE = 33,
    KMTQAITYPE_QUERY_GPUMMU_CAPS = 34,
    KMTQAITYPE_GETSEGMENTGROUPSIZE = 42
} KMTQUERYADAPTERINFOTYPE;

typedef struct _D3DKMT_QUERYADAPTERINFO {
    D3DKMT_HANDLE hAdapter;
    KMTQUERYADAPTERINFOTYPE Type;
    VOID *pPrivateDriverData;
    UINT PrivateDriverDataSize;
} D3DKMT_QUERYADAPTERINFO;

/* KMTQAITYPE_GETSEGMENTSIZE. */
typedef struct _D3DKMT_SEGMENTSIZEINFO {
    ULONGLONG DedicatedVideoMemorySize;
    ULONGLONG DedicatedSystemMemorySize;
    ULONGLONG SharedSystemMemorySize;
} D3DKMT_SEGMENTSIZEINFO;

/* KMTQAITYPE_GETSEGMENTGROUPSIZE. */
typedef struct _D3DKMT_SEGMENTGROUPSIZEINFO {
    UINT32 PhysicalAdapterIndex;
    D3DKMT_SEGMENTSIZEINFO LegacyInfo;
    ULONGLONG LocalMemory;
    ULONGLONG NonLocalMemory;
    ULONGLONG NonBudgetMemory;
} D3DKMT_SEGMENTGROUPSIZEINFO;

/* KMTQAITYPE_DRIVERVERSION. */
typedef enum _D3DKMT_DRIVERVERSION {
    KMT_DRIVERVERSION_WDDM_1_0 = 1000,
    KMT_DRIVERVERSION_WDDM_1_1_PRERELEASE = 1102,
    KMT_DRIVERVERSION_WDDM_1_1 = 1105,
    KMT_DRIVERVERSION_WDDM_1_2 = 1200,
    KMT_DRIVERVERSION_WDDM_1_3 = 1300,
    KMT_DRIVERVERSION_WDDM_2_0 = 2000,
    KMT_DRIVERVERSION_WDDM_2_1 = 2100,
    KMT_DRIVERVERSION_WDDM_2_2 = 2200,
    KMT_DRIVERVERSION_WDDM_2_3 = 2300
} D3DKMT_DRIVERVERSION;

/* KMTQAITYPE_ADAPTERTYPE. */
typedef struct _D3DKMT_ADAPTERTYPE {
    union {
        struct {
            UINT RenderSupported : 1;
            UINT DisplaySupported : 1;
            UINT SoftwareDevice : 1;
            UINT PostDevice : 1;
            UINT HybridDiscrete : 1;
            UINT HybridIntegrated : 1;
            UINT IndirectDisplayDevice : 1;
            UINT Paravirtualized : 1;
            UINT ACGSupported : 1;
            UINT SupportSetTimingsFromVidPn : 1;
            UINT Detachable : 1;
            UINT ComputeOnly : 1;
            UINT Prototype : 1;
            UINT RuntimePowerManagement : 1;
            UINT Reserved : 18;
        };
        UINT Value;
    };
} D3DKMT_ADAPTERTYPE;

/* KMTQAITYPE_WDDM_2_0_CAPS. */
typedef struct _D3DKMT_WDDM_2_0_CAPS {
    union {
        struct {
            UINT Support64BitAtomics : 1;
            UINT GpuMmuSupported : 1;
            UINT IoMmuSupported : 1;
            UINT FlipOverwriteSupported : 1;
            UINT SupportContextlessPresent : 1;
            UINT SupportSurpriseRemoval : 1;
            UINT Reserved : 26;
        };
        UINT Value;
    };
} D3DKMT_WDDM_2_0_CAPS;

/* ---- devices ---------------------------------------------------------- */

typedef struct _D3DDDI_ALLOCATIONLIST {
    D3DKMT_HANDLE hAllocation;
    union {
        struct {
            UINT WriteOperation : 1;
            UINT DoNotRetireInstance : 1;
            UINT OfferPriority : 3;
            UINT Reserved : 27;
        };
        UINT Value;
    };
} D3DDDI_ALLOCATIONLIST;

typedef struct _D3DDDI_PATCHLOCATIONLIST {
    UINT AllocationIndex;
    union {
        struct {
            UINT SlotId : 24;
            UINT Reserved : 8;
        };
        UINT Value;
    };
    UINT DriverId;
    UINT AllocationOffset;
    UINT PatchOffset;
    UINT SplitOffset;
} D3DDDI_PATCHLOCATIONLIST;

typedef struct _D3DKMT_CREATEDEVICEFLAGS {
    UINT LegacyMode : 1;
    UINT RequestVSync : 1;
    UINT DisableGpuTimeout : 1;
    UINT TestDevice : 1;
    UINT Reserved : 28;
} D3DKMT_CREATEDEVICEFLAGS;

typedef struct _D3DKMT_CREATEDEVICE {
    union {
        D3DKMT_HANDLE hAdapter;
        VOID *pAdapter;
    };
    D3DKMT_CREATEDEVICEFLAGS Flags;
    D3DKMT_HANDLE hDevice;                      /* out */
    VOID *pCommandBuffer;                       /* out: NULL (WDDM 2) */
    UINT CommandBufferSize;                     /* out: 0 */
    D3DDDI_ALLOCATIONLIST *pAllocationList;     /* out: NULL */
    UINT AllocationListSize;                    /* out: 0 */
    D3DDDI_PATCHLOCATIONLIST *pPatchLocationList; /* out: NULL */
    UINT PatchLocationListSize;                 /* out: 0 */
} D3DKMT_CREATEDEVICE;

typedef struct _D3DKMT_DESTROYDEVICE {
    D3DKMT_HANDLE hDevice;
} D3DKMT_DESTROYDEVICE;

/* ---- paging queues ---------------------------------------------------- */

typedef enum _D3DDDI_PAGINGQUEUE_PRIORITY {
    D3DDDI_PAGINGQUEUE_PRIORITY_BELOW_NORMAL = -1,
    D3DDDI_PAGINGQUEUE_PRIORITY_NORMAL = 0,
    D3DDDI_PAGINGQUEUE_PRIORITY_ABOVE_NORMAL = 1
} D3DDDI_PAGINGQUEUE_PRIORITY;

typedef struct _D3DKMT_CREATEPAGINGQUEUE {
    D3DKMT_HANDLE hDevice;
    D3DDDI_PAGINGQUEUE_PRIORITY Priority;
    D3DKMT_HANDLE hPagingQueue;                 /* out */
    D3DKMT_HANDLE hSyncObject;                  /* out: the queue's monitored fence */
    VOID *FenceValueCPUVirtualAddress;          /* out: read-only UINT64, see docs/D3DKMT.md */
    UINT PhysicalAdapterIndex;
} D3DKMT_CREATEPAGINGQUEUE;

typedef struct _D3DDDI_DESTROYPAGINGQUEUE {
    D3DKMT_HANDLE hPagingQueue;
} D3DDDI_DESTROYPAGINGQUEUE;

/* ---- allocations ------------------------------------------------------ */

/* Microsoft's bits, through NoImplicitSynchronization (bit 22).
 * CreateResident (bit 31) is vidmm's: with it the allocation is placed
 * in GPU memory at creation, without it it starts evicted and becomes
 * resident on its first D3DKMTMakeResident (docs/D3DKMT.md). */
typedef struct _D3DKMT_CREATEALLOCATIONFLAGS {
    UINT CreateResource : 1;
    UINT CreateShared : 1;
    UINT NonSecure : 1;
    UINT CreateProtected : 1;
    UINT RestrictSharedAccess : 1;
    UINT ExistingSysMem : 1;
    UINT NtSecuritySharing : 1;
    UINT ReadOnly : 1;
    UINT CreateWriteCombined : 1;
    UINT CreateCached : 1;
    UINT SwapChainBackBuffer : 1;
    UINT CrossAdapter : 1;
    UINT OpenCrossAdapter : 1;
    UINT PartialSharedCreation : 1;
    UINT Zeroed : 1;
    UINT WriteWatch : 1;
    UINT StandardAllocation : 1;
    UINT ExistingSection : 1;
    UINT AllowNotZeroed : 1;
    UINT PhysicallyContiguous : 1;
    UINT NoKmdAccess : 1;
    UINT SharedDisplayable : 1;
    UINT NoImplicitSynchronization : 1;
    UINT Reserved : 8;
    UINT CreateResident : 1;
} D3DKMT_CREATEALLOCATIONFLAGS;

typedef struct _D3DDDI_ALLOCATIONINFO2 {
    D3DKMT_HANDLE hAllocation;                  /* out */
    union {
        HANDLE hSection;
        const VOID *pSystemMem;
    };
    const VOID *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    D3DDDI_VIDEO_PRESENT_SOURCE_ID VidPnSourceId;
    union {
        struct {
            UINT Primary : 1;
            UINT Stereo : 1;
            UINT OverridePriority : 1;
            UINT Reserved : 29;
        };
        UINT Value;
    } Flags;
    D3DGPU_VIRTUAL_ADDRESS GpuVirtualAddress;
    union {
        UINT Priority;
        ULONG_PTR Unused;
    };
    ULONG_PTR Reserved[5];
} D3DDDI_ALLOCATIONINFO2;

typedef struct _D3DKMT_CREATEALLOCATION {
    D3DKMT_HANDLE hDevice;
    D3DKMT_HANDLE hResource;
    D3DKMT_HANDLE hGlobalShare;
    const VOID *pPrivateRuntimeData;
    UINT PrivateRuntimeDataSize;
    const VOID *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    UINT NumAllocations;
    D3DDDI_ALLOCATIONINFO2 *pAllocationInfo2;
    D3DKMT_CREATEALLOCATIONFLAGS Flags;
    HANDLE hPrivateRuntimeResourceHandle;
} D3DKMT_CREATEALLOCATION;

typedef struct _D3DDDICB_DESTROYALLOCATION2FLAGS {
    union {
        struct {
            UINT AssumeNotInUse : 1;
            UINT SynchronousDestroy : 1;
            UINT Reserved : 29;
            UINT SystemUseOnly : 1;
        };
        UINT Value;
    };
} D3DDDICB_DESTROYALLOCATION2FLAGS;

typedef struct _D3DKMT_DESTROYALLOCATION2 {
    D3DKMT_HANDLE hDevice;
    D3DKMT_HANDLE hResource;
    const D3DKMT_HANDLE *phAllocationList;
    UINT AllocationCount;
    D3DDDICB_DESTROYALLOCATION2FLAGS Flags;
} D3DKMT_DESTROYALLOCATION2;

typedef struct _D3DDDICB_LOCK2FLAGS {
    union {
        struct {
            UINT Reserved : 32;
        };
        UINT Value;
    };
} D3DDDICB_LOCK2FLAGS;

typedef struct _D3DKMT_LOCK2 {
    D3DKMT_HANDLE hDevice;
    D3DKMT_HANDLE hAllocation;
    D3DDDICB_LOCK2FLAGS Flags;
    PVOID pData;                                /* out */
} D3DKMT_LOCK2;

typedef struct _D3DKMT_UNLOCK2 {
    D3DKMT_HANDLE hDevice;
    D3DKMT_HANDLE hAllocation;
} D3DKMT_UNLOCK2;

/* ---- residency -------------------------------------------------------- */

typedef struct _D3DDDI_MAKERESIDENT_FLAGS {
    union {
        struct {
            UINT CantTrimFurther : 1;
            UINT MustSucceed : 1;
            UINT Reserved : 30;
        };
        UINT Value;
    };
} D3DDDI_MAKERESIDENT_FLAGS;

typedef struct _D3DDDI_MAKERESIDENT {
    D3DKMT_HANDLE hPagingQueue;
    UINT NumAllocations;
    const D3DKMT_HANDLE *AllocationList;
    const UINT *PriorityList;                   /* ignored, may be NULL */
    D3DDDI_MAKERESIDENT_FLAGS Flags;
    UINT64 PagingFenceValue;                    /* out */
    UINT64 NumBytesToTrim;                      /* out */
} D3DDDI_MAKERESIDENT;

typedef struct _D3DDDI_EVICT_FLAGS {
    union {
        struct {
            UINT EvictOnlyIfNecessary : 1;
            UINT NotWrittenTo : 1;
            UINT Reserved : 30;
        };
        UINT Value;
    };
} D3DDDI_EVICT_FLAGS;

typedef struct _D3DKMT_EVICT {
    D3DKMT_HANDLE hDevice;
    UINT NumAllocations;
    const D3DKMT_HANDLE *AllocationList;
    D3DDDI_EVICT_FLAGS Flags;
    UINT64 NumBytesToTrim;                      /* out */
} D3DKMT_EVICT;

#define D3DDDI_ALLOCATIONPRIORITY_MINIMUM 0x28000000u
#define D3DDDI_ALLOCATIONPRIORITY_LOW     0x50000000u
#define D3DDDI_ALLOCATIONPRIORITY_NORMAL  0x78000000u
#define D3DDDI_ALLOCATIONPRIORITY_HIGH    0xa0000000u
#define D3DDDI_ALLOCATIONPRIORITY_MAXIMUM 0xc8000000u

typedef struct _D3DKMT_SETALLOCATIONPRIORITY {
    D3DKMT_HANDLE hDevice;
    D3DKMT_HANDLE hResource;
    const D3DKMT_HANDLE *phAllocationList;
    UINT AllocationCount;
    const UINT *pPriorities;
} D3DKMT_SETALLOCATIONPRIORITY;

typedef enum _D3DKMT_OFFER_PRIORITY {
    D3DKMT_OFFER_PRIORITY_LOW = 1,
    D3DKMT_OFFER_PRIORITY_NORMAL = 2,
    D3DKMT_OFFER_PRIORITY_HIGH = 3,
    D3DKMT_OFFER_PRIORITY_AUTO = 4
} D3DKMT_OFFER_PRIORITY;

typedef struct _D3DKMT_OFFER_FLAGS {
    union {
        struct {
            UINT OfferImmediately : 1;
            UINT AllowDecommit : 1;
            UINT Reserved : 30;
        };
        UINT Value;
    };
} D3DKMT_OFFER_FLAGS;

typedef struct _D3DKMT_OFFERALLOCATIONS {
    D3DKMT_HANDLE hDevice;
    D3DKMT_HANDLE *pResources;
    const D3DKMT_HANDLE *HandleList;
    UINT NumAllocations;
    D3DKMT_OFFER_PRIORITY Priority;
    D3DKMT_OFFER_FLAGS Flags;
} D3DKMT_OFFERALLOCATIONS;

typedef enum _D3DDDI_RECLAIM_RESULT {
    D3DDDI_RECLAIM_RESULT_OK = 0,
    D3DDDI_RECLAIM_RESULT_DISCARDED = 1,
    D3DDDI_RECLAIM_RESULT_NOT_COMMITTED = 2
} D3DDDI_RECLAIM_RESULT;

typedef struct _D3DKMT_RECLAIMALLOCATIONS2 {
    D3DKMT_HANDLE hPagingQueue;
    UINT NumAllocations;
    D3DKMT_HANDLE *pResources;
    const D3DKMT_HANDLE *HandleList;
    union {
        BOOL *pDiscarded;
        D3DDDI_RECLAIM_RESULT *pResults;
    };
    UINT64 PagingFenceValue;                    /* out */
} D3DKMT_RECLAIMALLOCATIONS2;

/* ---- budgets and trim ------------------------------------------------- */

typedef enum _D3DKMT_MEMORY_SEGMENT_GROUP {
    D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL = 0,
    D3DKMT_MEMORY_SEGMENT_GROUP_NON_LOCAL = 1
} D3DKMT_MEMORY_SEGMENT_GROUP;

typedef struct _D3DKMT_QUERYVIDEOMEMORYINFO {
    HANDLE hProcess;                            /* NULL or D3DKMT_CURRENT_PROCESS: the caller */
    D3DKMT_HANDLE hAdapter;
    D3DKMT_MEMORY_SEGMENT_GROUP MemorySegmentGroup;
    UINT64 Budget;                              /* out */
    UINT64 CurrentUsage;                        /* out */
    UINT64 CurrentReservation;                  /* out */
    UINT64 AvailableForReservation;             /* out */
    UINT PhysicalAdapterIndex;
} D3DKMT_QUERYVIDEOMEMORYINFO;

typedef struct _D3DKMT_CHANGEVIDEOMEMORYRESERVATION {
    HANDLE hProcess;
    D3DKMT_HANDLE hAdapter;
    D3DKMT_MEMORY_SEGMENT_GROUP MemorySegmentGroup;
    UINT64 Reservation;
    UINT PhysicalAdapterIndex;
} D3DKMT_CHANGEVIDEOMEMORYRESERVATION;

/* GetCurrentProcess()'s pseudo handle, accepted as hProcess. */
#define D3DKMT_CURRENT_PROCESS ((HANDLE)(intptr_t)-1)

typedef struct _D3DDDI_TRIMRESIDENCYSET_FLAGS {
    union {
        struct {
            UINT PeriodicTrim : 1;
            UINT RestartPeriodicTrim : 1;
            UINT TrimToBudget : 1;
            UINT Reserved : 29;
        };
        UINT Value;
    };
} D3DDDI_TRIMRESIDENCYSET_FLAGS;

typedef struct _D3DKMT_TRIMNOTIFICATION {
    VOID *Context;
    D3DDDI_TRIMRESIDENCYSET_FLAGS Flags;
    UINT64 NumBytesToTrim;
} D3DKMT_TRIMNOTIFICATION;

typedef VOID (*PFND3DKMT_TRIMNOTIFICATIONCALLBACK)(D3DKMT_TRIMNOTIFICATION *);

typedef struct _D3DKMT_REGISTERTRIMNOTIFICATION {
    LUID AdapterLuid;
    D3DKMT_HANDLE hDevice;
    PFND3DKMT_TRIMNOTIFICATIONCALLBACK Callback;
    VOID *Context;
    VOID *Handle;                               /* out */
} D3DKMT_REGISTERTRIMNOTIFICATION;

typedef struct _D3DKMT_UNREGISTERTRIMNOTIFICATION {
    VOID *Handle;                               /* NULL: every registration of Callback */
    PFND3DKMT_TRIMNOTIFICATIONCALLBACK Callback;
} D3DKMT_UNREGISTERTRIMNOTIFICATION;

/* ---- GPU virtual addresses ------------------------------------------- */

typedef enum _D3DDDIGPUVIRTUALADDRESS_RESERVATION_TYPE {
    D3DDDIGPUVIRTUALADDRESS_RESERVE_NO_ACCESS = 0,
    D3DDDIGPUVIRTUALADDRESS_RESERVE_ZERO = 1,
    D3DDDIGPUVIRTUALADDRESS_RESERVE_NO_COMMIT = 2
} D3DDDIGPUVIRTUALADDRESS_RESERVATION_TYPE;

/* The documented form is 64-bit bit-fields; strict C11 has none, so
 * these are 32-bit ones over the low half of Value (little endian). */
typedef struct _D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE {
    union {
        struct {
            UINT Write : 1;
            UINT Execute : 1;
            UINT Zero : 1;
            UINT NoAccess : 1;
            UINT SystemUseOnly : 1;
            UINT Reserved : 27;
            UINT ReservedHigh;
        };
        UINT64 Value;
    };
} D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE;

typedef struct _D3DDDI_RESERVEGPUVIRTUALADDRESS {
    union {
        D3DKMT_HANDLE hPagingQueue;
        D3DKMT_HANDLE hAdapter;
    };
    D3DGPU_VIRTUAL_ADDRESS BaseAddress;
    D3DGPU_VIRTUAL_ADDRESS MinimumAddress;
    D3DGPU_VIRTUAL_ADDRESS MaximumAddress;
    D3DGPU_SIZE_T Size;
    union {
        D3DDDIGPUVIRTUALADDRESS_RESERVATION_TYPE ReservationType;
        UINT Reserved0;
    };
    union {
        UINT64 DriverProtection;
        UINT64 Reserved1;
    };
    D3DGPU_VIRTUAL_ADDRESS VirtualAddress;      /* out */
    union {
        UINT64 PagingFenceValue;                /* out */
        UINT64 Reserved2;
    };
} D3DDDI_RESERVEGPUVIRTUALADDRESS;

typedef struct _D3DDDI_MAPGPUVIRTUALADDRESS {
    D3DKMT_HANDLE hPagingQueue;
    D3DGPU_VIRTUAL_ADDRESS BaseAddress;
    D3DGPU_VIRTUAL_ADDRESS MinimumAddress;
    D3DGPU_VIRTUAL_ADDRESS MaximumAddress;
    D3DKMT_HANDLE hAllocation;
    D3DGPU_SIZE_T OffsetInPages;                /* 4 KiB pages */
    D3DGPU_SIZE_T SizeInPages;
    D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE Protection;
    UINT64 DriverProtection;
    UINT Reserved0;
    UINT64 Reserved1;
    D3DGPU_VIRTUAL_ADDRESS VirtualAddress;      /* out */
    UINT64 PagingFenceValue;                    /* out */
} D3DDDI_MAPGPUVIRTUALADDRESS;

typedef struct _D3DKMT_FREEGPUVIRTUALADDRESS {
    D3DKMT_HANDLE hAdapter;
    D3DGPU_VIRTUAL_ADDRESS BaseAddress;
    D3DGPU_SIZE_T Size;
} D3DKMT_FREEGPUVIRTUALADDRESS;

typedef enum _D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_TYPE {
    D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP = 0,
    D3DDDI_UPDATEGPUVIRTUALADDRESS_UNMAP = 1,
    D3DDDI_UPDATEGPUVIRTUALADDRESS_COPY = 2,
    D3DDDI_UPDATEGPUVIRTUALADDRESS_MAP_PROTECT = 3
} D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_TYPE;

typedef struct _D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
    D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_TYPE OperationType;
    union {
        struct {
            D3DGPU_VIRTUAL_ADDRESS BaseAddress;
            D3DGPU_SIZE_T SizeInBytes;
            D3DKMT_HANDLE hAllocation;
            D3DGPU_SIZE_T AllocationOffsetInBytes;
            D3DGPU_SIZE_T AllocationSizeInBytes;
        } Map;
        struct {
            D3DGPU_VIRTUAL_ADDRESS BaseAddress;
            D3DGPU_SIZE_T SizeInBytes;
            D3DKMT_HANDLE hAllocation;
            D3DGPU_SIZE_T AllocationOffsetInBytes;
            D3DGPU_SIZE_T AllocationSizeInBytes;
            D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE Protection;
            UINT64 DriverProtection;
        } MapProtect;
        struct {
            D3DGPU_VIRTUAL_ADDRESS BaseAddress;
            D3DGPU_SIZE_T SizeInBytes;
            D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE Protection;
        } Unmap;
        struct {
            D3DGPU_VIRTUAL_ADDRESS SourceAddress;
            D3DGPU_SIZE_T SizeInBytes;
            D3DGPU_VIRTUAL_ADDRESS DestAddress;
        } Copy;
    };
} D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION;

typedef struct _D3DKMT_UPDATEGPUVIRTUALADDRESS {
    D3DKMT_HANDLE hDevice;
    D3DKMT_HANDLE hContext;
    D3DKMT_HANDLE hFenceObject;
    UINT NumOperations;
    D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION *Operations;
    D3DKMT_HANDLE Reserved0;
    UINT64 Reserved1;
    UINT64 FenceValue;
    union {
        struct {
            UINT DoNotWait : 1;
            UINT Reserved : 31;
        };
        UINT Value;
    } Flags;
} D3DKMT_UPDATEGPUVIRTUALADDRESS;

/* ---- contexts and submission ----------------------------------------- */

typedef struct _D3DDDI_CREATECONTEXTFLAGS {
    union {
        struct {
            UINT NullRendering : 1;
            UINT InitialData : 1;
            UINT DisableGpuTimeout : 1;
            UINT SynchronizationOnly : 1;
            UINT HwQueueSupported : 1;
            UINT NoKmdAccess : 1;
            UINT Reserved : 26;
        };
        UINT Value;
    };
} D3DDDI_CREATECONTEXTFLAGS;

typedef enum _D3DKMT_CLIENTHINT {
    D3DKMT_CLIENTHINT_UNKNOWN = 0,
    D3DKMT_CLIENTHINT_OPENGL = 1,
    D3DKMT_CLIENTHINT_CDD = 2,
    D3DKMT_CLIENTHINT_OPENCL = 3,
    D3DKMT_CLIENTHINT_VULKAN = 4,
    D3DKMT_CLIENTHINT_CUDA = 5,
    D3DKMT_CLIENTHINT_RESERVED = 6,
    D3DKMT_CLIENTHINT_DX7 = 7,
    D3DKMT_CLIENTHINT_DX8 = 8,
    D3DKMT_CLIENTHINT_DX9 = 9,
    D3DKMT_CLIENTHINT_DX10 = 10,
    D3DKMT_CLIENTHINT_DX11 = 11,
    D3DKMT_CLIENTHINT_DX12 = 12
} D3DKMT_CLIENTHINT;

typedef struct _D3DKMT_CREATECONTEXTVIRTUAL {
    D3DKMT_HANDLE hDevice;
    UINT NodeOrdinal;
    UINT EngineAffinity;
    D3DDDI_CREATECONTEXTFLAGS Flags;
    VOID *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    D3DKMT_CLIENTHINT ClientHint;
    D3DKMT_HANDLE hContext;                     /* out */
} D3DKMT_CREATECONTEXTVIRTUAL;

typedef struct _D3DKMT_DESTROYCONTEXT {
    D3DKMT_HANDLE hContext;
} D3DKMT_DESTROYCONTEXT;

#define D3DDDI_MAX_BROADCAST_CONTEXT 64
#define D3DDDI_MAX_WRITTEN_PRIMARIES 16

typedef struct _D3DKMT_SUBMITCOMMANDFLAGS {
    UINT NullRendering : 1;
    UINT PresentRedirected : 1;
    UINT NoKmdAccess : 1;
    UINT Reserved : 29;
} D3DKMT_SUBMITCOMMANDFLAGS;

typedef struct _D3DKMT_SUBMITCOMMAND {
    D3DGPU_VIRTUAL_ADDRESS Commands;
    UINT CommandLength;
    D3DKMT_SUBMITCOMMANDFLAGS Flags;
    ULONGLONG PresentHistoryToken;
    UINT BroadcastContextCount;
    D3DKMT_HANDLE BroadcastContext[D3DDDI_MAX_BROADCAST_CONTEXT];
    VOID *pPrivateDriverData;
    UINT PrivateDriverDataSize;
    UINT NumPrimaries;
    D3DKMT_HANDLE WrittenPrimaries[D3DDDI_MAX_WRITTEN_PRIMARIES];
    UINT NumHistoryBuffers;
    D3DKMT_HANDLE *HistoryBufferArray;
} D3DKMT_SUBMITCOMMAND;

/* ---- synchronization objects (monitored fences) ---------------------- */

typedef enum _D3DDDI_SYNCHRONIZATIONOBJECT_TYPE {
    D3DDDI_SYNCHRONIZATION_MUTEX = 1,
    D3DDDI_SEMAPHORE = 2,
    D3DDDI_FENCE = 3,
    D3DDDI_CPU_NOTIFICATION = 4,
    D3DDDI_MONITORED_FENCE = 5,
    D3DDDI_PERIODIC_MONITORED_FENCE = 6,
    D3DDDI_SYNCHRONIZATION_TYPE_LIMIT
} D3DDDI_SYNCHRONIZATIONOBJECT_TYPE;

typedef struct _D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS {
    union {
        struct {
            UINT Shared : 1;
            UINT NtSecuritySharing : 1;
            UINT CrossAdapter : 1;
            UINT TopOfPipeline : 1;
            UINT NoSignal : 1;
            UINT NoWait : 1;
            UINT NoSignalMaxValueOnTdr : 1;
            UINT NoGPUAccess : 1;
            UINT Reserved : 23;
            UINT D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS_RESERVED0 : 1;
        };
        UINT Value;
    };
} D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS;

typedef struct _D3DDDI_SYNCHRONIZATIONOBJECTINFO2 {
    D3DDDI_SYNCHRONIZATIONOBJECT_TYPE Type;
    D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS Flags;
    union {
        struct {
            BOOL InitialState;
        } SynchronizationMutex;
        struct {
            UINT MaxCount;
            UINT InitialCount;
        } Semaphore;
        struct {
            UINT64 FenceValue;
        } Fence;
        struct {
            HANDLE Event;
        } CPUNotification;
        struct {
            UINT64 InitialFenceValue;
            VOID *FenceValueCPUVirtualAddress;          /* out */
            D3DGPU_VIRTUAL_ADDRESS FenceValueGPUVirtualAddress; /* out: 0 here */
            UINT EngineAffinity;
        } MonitoredFence;
        struct {
            UINT64 Reserved[8];
        } Reserved;
    };
    D3DKMT_HANDLE SharedHandle;
} D3DDDI_SYNCHRONIZATIONOBJECTINFO2;

typedef struct _D3DKMT_CREATESYNCHRONIZATIONOBJECT2 {
    D3DKMT_HANDLE hDevice;
    D3DDDI_SYNCHRONIZATIONOBJECTINFO2 Info;
    D3DKMT_HANDLE hSyncObject;                  /* out */
} D3DKMT_CREATESYNCHRONIZATIONOBJECT2;

typedef struct _D3DKMT_DESTROYSYNCHRONIZATIONOBJECT {
    D3DKMT_HANDLE hSyncObject;
} D3DKMT_DESTROYSYNCHRONIZATIONOBJECT;

typedef struct _D3DDDICB_SIGNALFLAGS {
    UINT SignalAtSubmission : 1;
    UINT EnqueueCpuEvent : 1;
    UINT AllowFenceRewind : 1;
    UINT Reserved : 28;
    UINT DXGK_SIGNAL_FLAG_INTERNAL0 : 1;
} D3DDDICB_SIGNALFLAGS;

typedef struct _D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU {
    D3DKMT_HANDLE hDevice;
    UINT ObjectCount;
    const D3DKMT_HANDLE *ObjectHandleArray;
    const UINT64 *FenceValueArray;
    D3DDDICB_SIGNALFLAGS Flags;
} D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU;

typedef struct _D3DDDI_WAITFORSYNCHRONIZATIONOBJECTFROMCPU_FLAGS {
    union {
        struct {
            UINT WaitAny : 1;
            UINT Reserved : 31;
        };
        UINT Value;
    };
} D3DDDI_WAITFORSYNCHRONIZATIONOBJECTFROMCPU_FLAGS;

typedef struct _D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
    D3DKMT_HANDLE hDevice;
    UINT ObjectCount;
    const D3DKMT_HANDLE *ObjectHandleArray;
    const UINT64 *FenceValueArray;
    HANDLE hAsyncEvent;                         /* must be NULL here */
    D3DDDI_WAITFORSYNCHRONIZATIONOBJECTFROMCPU_FLAGS Flags;
} D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU;

typedef struct _D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMGPU {
    D3DKMT_HANDLE hContext;
    UINT ObjectCount;
    const D3DKMT_HANDLE *ObjectHandleArray;
    union {
        const UINT64 *MonitoredFenceValueArray;
        UINT64 Reserved[8];
    };
} D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMGPU;

/* ---- the thunks -------------------------------------------------------- */

NTSTATUS D3DKMTEnumAdapters2(D3DKMT_ENUMADAPTERS2 *args);
NTSTATUS D3DKMTOpenAdapterFromLuid(D3DKMT_OPENADAPTERFROMLUID *args);
NTSTATUS D3DKMTCloseAdapter(const D3DKMT_CLOSEADAPTER *args);
NTSTATUS D3DKMTQueryAdapterInfo(const D3DKMT_QUERYADAPTERINFO *args);

NTSTATUS D3DKMTCreateDevice(D3DKMT_CREATEDEVICE *args);
NTSTATUS D3DKMTDestroyDevice(const D3DKMT_DESTROYDEVICE *args);

NTSTATUS D3DKMTCreatePagingQueue(D3DKMT_CREATEPAGINGQUEUE *args);
NTSTATUS D3DKMTDestroyPagingQueue(D3DDDI_DESTROYPAGINGQUEUE *args);

NTSTATUS D3DKMTCreateAllocation(D3DKMT_CREATEALLOCATION *args);  /* the same as D3DKMTCreateAllocation2 here */
NTSTATUS D3DKMTCreateAllocation2(D3DKMT_CREATEALLOCATION *args);
NTSTATUS D3DKMTDestroyAllocation2(const D3DKMT_DESTROYALLOCATION2 *args);
NTSTATUS D3DKMTLock2(D3DKMT_LOCK2 *args);
NTSTATUS D3DKMTUnlock2(const D3DKMT_UNLOCK2 *args);

NTSTATUS D3DKMTMakeResident(D3DDDI_MAKERESIDENT *args);
NTSTATUS D3DKMTEvict(D3DKMT_EVICT *args);
NTSTATUS D3DKMTSetAllocationPriority(const D3DKMT_SETALLOCATIONPRIORITY *args);
NTSTATUS D3DKMTOfferAllocations(const D3DKMT_OFFERALLOCATIONS *args);
NTSTATUS D3DKMTReclaimAllocations2(D3DKMT_RECLAIMALLOCATIONS2 *args);

NTSTATUS D3DKMTQueryVideoMemoryInfo(D3DKMT_QUERYVIDEOMEMORYINFO *args);
NTSTATUS D3DKMTChangeVideoMemoryReservation(const D3DKMT_CHANGEVIDEOMEMORYRESERVATION *args);
NTSTATUS D3DKMTRegisterTrimNotification(D3DKMT_REGISTERTRIMNOTIFICATION *args);
NTSTATUS D3DKMTUnregisterTrimNotification(D3DKMT_UNREGISTERTRIMNOTIFICATION *args);

NTSTATUS D3DKMTReserveGpuVirtualAddress(D3DDDI_RESERVEGPUVIRTUALADDRESS *args);
NTSTATUS D3DKMTMapGpuVirtualAddress(D3DDDI_MAPGPUVIRTUALADDRESS *args);
NTSTATUS D3DKMTFreeGpuVirtualAddress(const D3DKMT_FREEGPUVIRTUALADDRESS *args);
NTSTATUS D3DKMTUpdateGpuVirtualAddress(const D3DKMT_UPDATEGPUVIRTUALADDRESS *args);

NTSTATUS D3DKMTCreateContextVirtual(D3DKMT_CREATECONTEXTVIRTUAL *args);
NTSTATUS D3DKMTDestroyContext(const D3DKMT_DESTROYCONTEXT *args);
NTSTATUS D3DKMTSubmitCommand(const D3DKMT_SUBMITCOMMAND *args);

NTSTATUS D3DKMTCreateSynchronizationObject2(D3DKMT_CREATESYNCHRONIZATIONOBJECT2 *args);
NTSTATUS D3DKMTDestroySynchronizationObject(const D3DKMT_DESTROYSYNCHRONIZATIONOBJECT *args);
NTSTATUS D3DKMTSignalSynchronizationObjectFromCpu(const D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMCPU *args);
NTSTATUS D3DKMTWaitForSynchronizationObjectFromCpu(const D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU *args);
NTSTATUS D3DKMTSignalSynchronizationObjectFromGpu(const D3DKMT_SIGNALSYNCHRONIZATIONOBJECTFROMGPU *args);

/* ---- the thunk runtime (vidmm's, not Microsoft's) --------------------- */

struct d3dkmt_runtime;
struct vidmm_adapter;
struct vidmm_host_allocator;

#define D3DKMT_RUNTIME_ABI_VERSION 1u
#define D3DKMT_MAX_ADAPTERS 16u

struct d3dkmt_runtime_create_info {
    UINT abi_version;                                   /* D3DKMT_RUNTIME_ABI_VERSION */
    const struct vidmm_host_allocator *host_allocator;  /* NULL = vidmm_default_host_allocator() */
};

/* A runtime: one process's handle tables.  STATUS_INVALID_PARAMETER for
 * NULL or a bad abi_version, STATUS_NO_MEMORY. */
NTSTATUS d3dkmt_runtime_open(const struct d3dkmt_runtime_create_info *info, struct d3dkmt_runtime **out);
/* Destroys every object still open (devices, allocations, fences), the
 * runtime's vidmm process on each adapter, and the adapters it owns;
 * clears it from the process and the calling thread if current there.
 * No other thread may be inside the runtime.  NULL is a no-op. */
void d3dkmt_runtime_close(struct d3dkmt_runtime *rt);

/* The process's runtime (NULL clears it). */
NTSTATUS d3dkmt_runtime_make_current(struct d3dkmt_runtime *rt);
/* The calling thread's runtime, before the process's (NULL unbinds). */
NTSTATUS d3dkmt_runtime_bind_thread(struct d3dkmt_runtime *rt);
/* The runtime the calling thread's thunks act on, or NULL. */
struct d3dkmt_runtime *d3dkmt_runtime_current(void);

/* Registers an open vidmm adapter under a LUID (not 0, unique in the
 * runtime).  The runtime creates its vidmm process on it; the adapter
 * stays the caller's (close the runtime first).  Several runtimes may
 * share one adapter: they are then separate processes on it.
 * STATUS_INVALID_PARAMETER (NULL, zero or duplicate LUID, more than
 * D3DKMT_MAX_ADAPTERS), else the process creation's status. */
NTSTATUS d3dkmt_runtime_add_adapter(struct d3dkmt_runtime *rt, struct vidmm_adapter *adapter, LUID luid);

/* The OS side: the vidmm adapter of luid and the vidmm process handle (a
 * vidmm_handle) the runtime uses on it, for the calls a kernel makes
 * (vidmm_process_set_budget).  STATUS_INVALID_PARAMETER when unknown. */
NTSTATUS d3dkmt_runtime_vidmm_process(struct d3dkmt_runtime *rt, LUID luid, struct vidmm_adapter **adapter,
                                      UINT64 *process);

/* The vidmm status behind an NTSTATUS answer: the mapping of
 * docs/D3DKMT.md, as a function (status is a vidmm_status value). */
NTSTATUS d3dkmt_ntstatus_from_vidmm(int status);

#ifdef __cplusplus
}
#endif
#endif
