/*
 * drvcheck.h - kept so that plug-ins built with -Iexamples/drvcheck and
 * `#include "drvcheck.h"` still compile: the kit's interface is the
 * installed header vidmm/drvcheck.h.
 */
#ifndef VIDMM_EXAMPLES_DRVCHECK_H
#define VIDMM_EXAMPLES_DRVCHECK_H
#include "vidmm/drvcheck.h"
#endif
