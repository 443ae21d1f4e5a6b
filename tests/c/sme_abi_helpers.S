// SME helpers of the SME kernel tests (tests/test_sme_kernels.py): written with SVE/SME
// mnemonics, rewritten to `.inst` words by the encoder, assembled with -march=armv8-a.
// System registers by their generic names (Arm ARM DDI0487): SVCR = s3_3_c4_c2_2 (bit 0 SM,
// bit 1 ZA), TPIDR2_EL0 = s3_3_c13_c0_5.
//
//   long     sme_svl_bytes(void)              RDSVL: streaming vector length in bytes
//   uint64_t sme_svcr(void)                    SVCR
//   uint64_t sme_tpidr2(void)                  TPIDR2_EL0
//   void     sme_set_tpidr2(uint64_t)
//   void     sme_za_fill(const uint8_t *src)   PSTATE.ZA = 1, ZA array vector i = src + i*SVL/8
//                                              (SVL/8 vectors); returns with SM = 0, ZA = 1
//   void     sme_za_off(void)                  SMSTOP ZA
//   void     sme_imopa_probe(const int8_t *a, const int8_t *b, int32_t *out)
//            one SMOPA za0.s from zeroed ZA with z0.b = a, z1.b = b (SVL/8 bytes each); out =
//            the S x S tile row by row (tells an emulator's 32-bit integer MOPA apart)
//   uint64_t sme_call_checked(fn, a, b, ksteps, c, ldc, args, uint64_t after[2])
//            calls fn(a, b, ksteps, c, ldc, args) with x18, x19-x28, d8-d15 set to patterns
//            (ts_sme_patterns) and returns a mask of the ones changed (bits 0-9 x19-x28,
//            10-17 d8-d15, 18 x18, 19 sp); after[0] = SVCR, after[1] = TPIDR2_EL0 on return.
        .text
        .p2align 2
        .global sme_svl_bytes
        .type sme_svl_bytes, %function
sme_svl_bytes:
        rdsvl x0, #1
        ret
        .size sme_svl_bytes, .-sme_svl_bytes

        .global sme_svcr
        .type sme_svcr, %function
sme_svcr:
        mrs x0, s3_3_c4_c2_2
        ret
        .size sme_svcr, .-sme_svcr

        .global sme_tpidr2
        .type sme_tpidr2, %function
sme_tpidr2:
        mrs x0, s3_3_c13_c0_5
        ret
        .size sme_tpidr2, .-sme_tpidr2

        .global sme_set_tpidr2
        .type sme_set_tpidr2, %function
sme_set_tpidr2:
        msr s3_3_c13_c0_5, x0
        ret
        .size sme_set_tpidr2, .-sme_set_tpidr2

        .global sme_za_fill
        .type sme_za_fill, %function
sme_za_fill:
        stp d8, d9, [sp, #-64]!
        stp d10, d11, [sp, #16]
        stp d12, d13, [sp, #32]
        stp d14, d15, [sp, #48]
        smstart
        ptrue p0.b
        rdsvl x1, #1
        mov w12, #0
1:      ld1b {za0h.b[w12, 0]}, p0/z, [x0]
        addsvl x0, x0, #1
        add w12, w12, #1
        cmp x12, x1
        b.lo 1b
        smstop sm
        ldp d10, d11, [sp, #16]
        ldp d12, d13, [sp, #32]
        ldp d14, d15, [sp, #48]
        ldp d8, d9, [sp], #64
        ret
        .size sme_za_fill, .-sme_za_fill

        .global sme_za_off
        .type sme_za_off, %function
sme_za_off:
        smstop za
        ret
        .size sme_za_off, .-sme_za_off

        .global sme_imopa_probe
        .type sme_imopa_probe, %function
sme_imopa_probe:
        stp d8, d9, [sp, #-64]!
        stp d10, d11, [sp, #16]
        stp d12, d13, [sp, #32]
        stp d14, d15, [sp, #48]
        smstart
        ptrue p0.b
        ld1b {z0.b}, p0/z, [x0]
        ld1b {z1.b}, p0/z, [x1]
        zero {za}
        smopa za0.s, p0/m, p0/m, z0.b, z1.b
        cntw x3
        mov w12, #0
        mov x4, #0
1:      st1w {za0h.s[w12, 0]}, p0, [x2, x4, lsl #2]
        add x4, x4, x3
        add w12, w12, #1
        cmp x12, x3
        b.lo 1b
        smstop
        ldp d10, d11, [sp, #16]
        ldp d12, d13, [sp, #32]
        ldp d14, d15, [sp, #48]
        ldp d8, d9, [sp], #64
        ret
        .size sme_imopa_probe, .-sme_imopa_probe

        .section .rodata
        .p2align 3
        .global ts_sme_patterns
ts_sme_patterns:
        .quad 0x1919191919191919, 0x2020202020202020, 0x2121212121212121, 0x2222222222222222
        .quad 0x2323232323232323, 0x2424242424242424, 0x2525252525252525, 0x2626262626262626
        .quad 0x2727272727272727, 0x2828282828282828
        .quad 0x0808080808080808, 0x0909090909090909, 0x1010101010101010, 0x1111111111111111
        .quad 0x1212121212121212, 0x1313131313131313, 0x1414141414141414, 0x1515151515151515
        .quad 0x1818181818181818
        .text

// x10 = &ts_sme_patterns; compare a register with pattern `index`, set bit `index` of x0.
.macro check_x reg, index
        ldr x11, [x10, #\index*8]
        cmp \reg, x11
        cset x12, ne
        orr x0, x0, x12, lsl #\index
.endm
.macro check_d reg, index
        fmov x13, \reg
        ldr x11, [x10, #\index*8]
        cmp x13, x11
        cset x12, ne
        orr x0, x0, x12, lsl #\index
.endm

        .global sme_call_checked
        .type sme_call_checked, %function
sme_call_checked:
        stp x29, x30, [sp, #-192]!
        mov x29, sp
        stp x19, x20, [sp, #16]
        stp x21, x22, [sp, #32]
        stp x23, x24, [sp, #48]
        stp x25, x26, [sp, #64]
        stp x27, x28, [sp, #80]
        stp d8, d9, [sp, #96]
        stp d10, d11, [sp, #112]
        stp d12, d13, [sp, #128]
        stp d14, d15, [sp, #144]
        str x18, [sp, #160]
        str x7, [sp, #168]                  // after[]
        mov x9, x0
        mov x0, x1
        mov x1, x2
        mov x2, x3
        mov x3, x4
        mov x4, x5
        mov x5, x6
        adrp x10, ts_sme_patterns
        add x10, x10, :lo12:ts_sme_patterns
        ldp x19, x20, [x10, #0]
        ldp x21, x22, [x10, #16]
        ldp x23, x24, [x10, #32]
        ldp x25, x26, [x10, #48]
        ldp x27, x28, [x10, #64]
        ldp d8, d9, [x10, #80]
        ldp d10, d11, [x10, #96]
        ldp d12, d13, [x10, #112]
        ldp d14, d15, [x10, #128]
        ldr x18, [x10, #144]
        blr x9
        mrs x14, s3_3_c4_c2_2               // SVCR
        mrs x15, s3_3_c13_c0_5              // TPIDR2_EL0
        adrp x10, ts_sme_patterns
        add x10, x10, :lo12:ts_sme_patterns
        mov x0, #0
        check_x x19, 0
        check_x x20, 1
        check_x x21, 2
        check_x x22, 3
        check_x x23, 4
        check_x x24, 5
        check_x x25, 6
        check_x x26, 7
        check_x x27, 8
        check_x x28, 9
        check_d d8, 10
        check_d d9, 11
        check_d d10, 12
        check_d d11, 13
        check_d d12, 14
        check_d d13, 15
        check_d d14, 16
        check_d d15, 17
        check_x x18, 18
        mov x11, sp
        cmp x11, x29
        cset x12, ne
        orr x0, x0, x12, lsl #19
        mov sp, x29
        ldr x7, [sp, #168]
        stp x14, x15, [x7]
        ldp x19, x20, [sp, #16]
        ldp x21, x22, [sp, #32]
        ldp x23, x24, [sp, #48]
        ldp x25, x26, [sp, #64]
        ldp x27, x28, [sp, #80]
        ldp d8, d9, [sp, #96]
        ldp d10, d11, [sp, #112]
        ldp d12, d13, [sp, #128]
        ldp d14, d15, [sp, #144]
        ldr x18, [sp, #160]
        ldp x29, x30, [sp], #192
        ret
        .size sme_call_checked, .-sme_call_checked
        .section .note.GNU-stack,"",%progbits
