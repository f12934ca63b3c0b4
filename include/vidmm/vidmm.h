/*
 * vidmm/vidmm.h - umbrella header of libvidmm.
 */
#ifndef VIDMM_VIDMM_H
#define VIDMM_VIDMM_H

#include "vidmm/version.h"
#include "vidmm/status.h"
#include "vidmm/host_alloc.h"
#include "vidmm/driver.h"
#include "vidmm/adapter.h"
#include "vidmm/segment.h"
#include "vidmm/allocation.h"
#include "vidmm/gpummu.h"
#include "vidmm/process.h"
#include "vidmm/device.h"
#include "vidmm/share.h"
#include "vidmm/policy.h"
#include "vidmm/residency.h"
#include "vidmm/submit.h"
#include "vidmm/tdr.h"
#include "vidmm/power.h"
#include "vidmm/rules.h"
#include "vidmm/observe.h"

#endif
