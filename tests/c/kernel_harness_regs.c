/* call_checked: call a micro-kernel with x18, x19-x28 and d8-d15 set to known patterns and
 * report which of them (and sp) differ afterwards. AAPCS64 (Arm IHI 0055): x19-x28 and the low
 * 64 bits of v8-v15 are callee-saved, x18 is the platform register (tilesmith kernels never
 * touch it), sp must come back unchanged.
 *
 *   unsigned call_checked(kernel_fn fn, const void *a, const void *b, size_t ksteps, void *c,
 *                         size_t ldc_bytes, const void *args);
 *   returns a bit mask: bits 0-9 x19-x28, 10-17 d8-d15, 18 x18, 19 sp; 0 = all preserved.
 *   call_checked_strip: the same code, x7 passed on as the kernel's seventh argument (x6): the
 *   strip entries (README "Micro-kernel ABI", strips). */
#include <stdint.h>

/* 19 distinct 64-bit patterns: x19..x28, d8..d15, x18. */
const uint64_t ts_reg_patterns[19] = {
    0x1919191919191919ull, 0x2020202020202020ull, 0x2121212121212121ull, 0x2222222222222222ull,
    0x2323232323232323ull, 0x2424242424242424ull, 0x2525252525252525ull, 0x2626262626262626ull,
    0x2727272727272727ull, 0x2828282828282828ull,
    0x0808080808080808ull, 0x0909090909090909ull, 0x1010101010101010ull, 0x1111111111111111ull,
    0x1212121212121212ull, 0x1313131313131313ull, 0x1414141414141414ull, 0x1515151515151515ull,
    0x1818181818181818ull,
};

/* x10 = &ts_reg_patterns; compare a register with pattern `index` and set bit `index` of x0. */
#define CHECK_X(reg, index) \
    "ldr x11, [x10, #" #index "*8]\n\tcmp " #reg ", x11\n\tcset x12, ne\n\torr x0, x0, x12, lsl #" #index "\n\t"
#define CHECK_D(reg, index) \
    "fmov x13, " #reg "\n\tldr x11, [x10, #" #index "*8]\n\tcmp x13, x11\n\tcset x12, ne\n\t" \
    "orr x0, x0, x12, lsl #" #index "\n\t"
#define LOAD_PATTERNS "adrp x10, ts_reg_patterns\n\tadd x10, x10, :lo12:ts_reg_patterns\n\t"

__asm__(
    ".text\n\t.p2align 2\n\t.globl call_checked\n\t.type call_checked, %function\n"
    ".globl call_checked_strip\n\t.type call_checked_strip, %function\n"
    "call_checked:\n"
    "call_checked_strip:\n\t"
    "stp x29, x30, [sp, #-176]!\n\t"
    "mov x29, sp\n\t"
    "stp x19, x20, [sp, #16]\n\tstp x21, x22, [sp, #32]\n\tstp x23, x24, [sp, #48]\n\t"
    "stp x25, x26, [sp, #64]\n\tstp x27, x28, [sp, #80]\n\t"
    "stp d8, d9, [sp, #96]\n\tstp d10, d11, [sp, #112]\n\tstp d12, d13, [sp, #128]\n\t"
    "stp d14, d15, [sp, #144]\n\tstr x18, [sp, #160]\n\t"
    "mov x9, x0\n\tmov x0, x1\n\tmov x1, x2\n\tmov x2, x3\n\tmov x3, x4\n\tmov x4, x5\n\tmov x5, x6\n\tmov x6, x7\n\t"
    LOAD_PATTERNS
    "ldp x19, x20, [x10, #0]\n\tldp x21, x22, [x10, #16]\n\tldp x23, x24, [x10, #32]\n\t"
    "ldp x25, x26, [x10, #48]\n\tldp x27, x28, [x10, #64]\n\t"
    "ldp d8, d9, [x10, #80]\n\tldp d10, d11, [x10, #96]\n\tldp d12, d13, [x10, #112]\n\t"
    "ldp d14, d15, [x10, #128]\n\tldr x18, [x10, #144]\n\t"
    "blr x9\n\t"
    LOAD_PATTERNS
    "mov x0, #0\n\t"
    CHECK_X(x19, 0) CHECK_X(x20, 1) CHECK_X(x21, 2) CHECK_X(x22, 3) CHECK_X(x23, 4)
    CHECK_X(x24, 5) CHECK_X(x25, 6) CHECK_X(x26, 7) CHECK_X(x27, 8) CHECK_X(x28, 9)
    CHECK_D(d8, 10) CHECK_D(d9, 11) CHECK_D(d10, 12) CHECK_D(d11, 13) CHECK_D(d12, 14)
    CHECK_D(d13, 15) CHECK_D(d14, 16) CHECK_D(d15, 17) CHECK_X(x18, 18)
    "mov x11, sp\n\tcmp x11, x29\n\tcset x12, ne\n\torr x0, x0, x12, lsl #19\n\t"
    "mov sp, x29\n\t"
    "ldp x19, x20, [sp, #16]\n\tldp x21, x22, [sp, #32]\n\tldp x23, x24, [sp, #48]\n\t"
    "ldp x25, x26, [sp, #64]\n\tldp x27, x28, [sp, #80]\n\t"
    "ldp d8, d9, [sp, #96]\n\tldp d10, d11, [sp, #112]\n\tldp d12, d13, [sp, #128]\n\t"
    "ldp d14, d15, [sp, #144]\n\tldr x18, [sp, #160]\n\t"
    "ldp x29, x30, [sp], #176\n\t"
    "ret\n\t"
    ".size call_checked, . - call_checked\n");
