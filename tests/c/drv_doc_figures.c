/* The workspace figures tilesmith.h and README.md quote as examples (ARCH=v86), computed by
 * the build: tests/test_drivers_context.py test_documented_workspace_figures compares each
 * line "<name> <bytes>" with the number the documentation gives for it. */
#include <stdio.h>
#include <string.h>

#include "tilesmith.h"

int main(void)
{
    ts_context *gemm_only = NULL;
    if (ts_context_create(&gemm_only) != TS_OK
        || ts_context_set_pack_layouts(gemm_only, TS_LAYOUT_GEMM) != TS_OK)
        return 1;
    /* int8 FC layer, M = 1 (decode) and 64, N = 1000, K = 1280, one thread */
    printf("int8_m1_prepacked %zu\n",
           ts_context_workspace_size_prepacked(NULL, TS_GEMM_INT8, 1, 1000, 1280));
    printf("int8_m1_full %zu\n", ts_context_workspace_size(NULL, TS_GEMM_INT8, 1, 1000, 1280));
    printf("int8_m64_prepacked %zu\n",
           ts_context_workspace_size_prepacked(NULL, TS_GEMM_INT8, 64, 1000, 1280));
    printf("int8_m64_full %zu\n", ts_context_workspace_size(NULL, TS_GEMM_INT8, 64, 1000, 1280));
    printf("int8_m1_prepacked_gemm_layout %zu\n",
           ts_context_workspace_size_prepacked(gemm_only, TS_GEMM_INT8, 1, 1000, 1280));
    ts_context_free(gemm_only);
    /* int8 M = 4096, N = K = 1024: the int32 stage is one M block per task (ts_engine.c) */
    printf("int8_m4096_full %zu\n", ts_context_workspace_size(NULL, TS_GEMM_INT8, 4096, 1024, 1024));
    /* ResNet-style 3x3 conv, 512 -> 512 channels on 14 x 14, padding 1 */
    ts_conv2d c;
    memset(&c, 0, sizeof c);
    c.batch = 1;
    c.in_h = c.in_w = 14;
    c.in_c = c.out_c = 512;
    c.k_h = c.k_w = 3;
    c.stride_h = c.stride_w = c.dilation_h = c.dilation_w = 1;
    c.pad_top = c.pad_left = c.pad_bottom = c.pad_right = 1;
    printf("conv_prepacked %zu\n", ts_conv2d_s8_prepacked_workspace_size(&c));
    printf("conv_full %zu\n", ts_conv2d_s8_workspace_size(&c));
    return 0;
}
