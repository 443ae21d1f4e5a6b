/* Prints ts_cpu_features() (drivers/src/ts_cpu.c) as detected on the CPU qemu emulates, and
 * that the feature mask does not change detection. tests/test_sme_kernels.py runs it under
 * -cpu max, max,sme=off and cortex-a57, and with SME the streaming vector length ts_sme.c reads.
 * No kernel is called: ts_paths_of and ts_cpu_cores (ts_dispatch.c, generated) are stubs. */
#include <stdio.h>
#include "ts_pack_internal.h"

const ts_path *ts_paths_of(int gemm_type, size_t *count)
{
    (void)gemm_type;
    *count = 0;
    return NULL;
}

const ts_cpu_core *ts_cpu_cores(size_t *count)
{
    *count = 0;
    return NULL;
}

int main(void)
{
    unsigned f = ts_cpu_features();
    ts_set_feature_mask(0);
    printf("features %u sme %d again %u\n", f, (f & TS_FEAT_SME) != 0, ts_cpu_features());
    if (f & TS_FEAT_SME)   /* RDSVL (ts_sme.c): only with SME, else it would trap */
        printf("svl %zu\n", ts_sme_svl_bytes());
    return 0;
}
