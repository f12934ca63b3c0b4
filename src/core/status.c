/*
 * status.c - names of vidmm_status values.
 */
#include "vidmm/status.h"

const char *vidmm_status_str(vidmm_status st)
{
    switch (st) {
    case VIDMM_OK: return "VIDMM_OK";
    case VIDMM_PENDING: return "VIDMM_PENDING";
    case VIDMM_NO_MORE: return "VIDMM_NO_MORE";
    case VIDMM_E_INVALID_ARG: return "VIDMM_E_INVALID_ARG";
    case VIDMM_E_INVALID_HANDLE: return "VIDMM_E_INVALID_HANDLE";
    case VIDMM_E_NO_HOST_MEMORY: return "VIDMM_E_NO_HOST_MEMORY";
    case VIDMM_E_NO_SEGMENT_SPACE: return "VIDMM_E_NO_SEGMENT_SPACE";
    case VIDMM_E_OVERFLOW: return "VIDMM_E_OVERFLOW";
    case VIDMM_E_ALIGNMENT: return "VIDMM_E_ALIGNMENT";
    case VIDMM_E_BAD_SEGMENT_SET: return "VIDMM_E_BAD_SEGMENT_SET";
    case VIDMM_E_BAD_DRIVER_DESC: return "VIDMM_E_BAD_DRIVER_DESC";
    case VIDMM_E_DRIVER_FAILURE: return "VIDMM_E_DRIVER_FAILURE";
    case VIDMM_E_NOT_SUPPORTED: return "VIDMM_E_NOT_SUPPORTED";
    case VIDMM_E_BUSY: return "VIDMM_E_BUSY";
    case VIDMM_E_INSUFFICIENT_DMA_BUFFER: return "VIDMM_E_INSUFFICIENT_DMA_BUFFER";
    case VIDMM_E_ALLOCATION_BUSY: return "VIDMM_E_ALLOCATION_BUSY";
    case VIDMM_E_TOO_LARGE: return "VIDMM_E_TOO_LARGE";
    case VIDMM_E_COMMIT_LIMIT: return "VIDMM_E_COMMIT_LIMIT";
    case VIDMM_E_STATE: return "VIDMM_E_STATE";
    case VIDMM_E_DEVICE_LOST: return "VIDMM_E_DEVICE_LOST";
    case VIDMM_E_TIMEOUT: return "VIDMM_E_TIMEOUT";
    case VIDMM_E_PAGE_FAULT: return "VIDMM_E_PAGE_FAULT";
    case VIDMM_E_OVER_BUDGET: return "VIDMM_E_OVER_BUDGET";
    case VIDMM_E_NOT_ACCESSED_PHYSICALLY: return "VIDMM_E_NOT_ACCESSED_PHYSICALLY";
    case VIDMM_E_INTERNAL: return "VIDMM_E_INTERNAL";
    case VIDMM_E_BUFFER_TOO_SMALL: return "VIDMM_E_BUFFER_TOO_SMALL";
    }
    return "VIDMM_E_UNKNOWN";
}
