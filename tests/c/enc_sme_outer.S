// SME smoke kernel of the encoder tests (tests/test_encoder_sme_qemu.py): written with SVE/SME
// mnemonics, rewritten to `.inst` words by the encoder, assembled with -march=armv8-a.
//
// long enc_sme_svl(void): the streaming vector length in bytes (RDSVL works outside
// streaming mode).
//
// long enc_sme_outer(const float *a, const float *b, float *c, float *ct, long k, long n):
// with S = SVL / 32 (fp32 lanes of a streaming vector), c and ct S x S row-major, a and b
// k rows of S floats:
//   ZA0.S <- c (horizontal slices, every column);
//   ZA0.S[i][j] += a[kk][i] * b[kk][j] for kk < k, i < S, j < n (whilelt column predicate);
//   c[i][j] <- ZA0.S[i][j] for j < n (columns >= n untouched);
//   ct[j][i] <- ZA0.S[i][j] for every i, j (vertical slices through MOVA and an SVE store).
// Returns the SVL in bytes.  d8-d15 are saved: SMSTART/SMSTOP zero the Z registers.
        .text
        .global enc_sme_svl
        .type enc_sme_svl, %function
        .p2align 2
enc_sme_svl:
        rdsvl   x0, #1
        ret
        .size enc_sme_svl, .-enc_sme_svl

        .global enc_sme_outer
        .type enc_sme_outer, %function
        .p2align 2
enc_sme_outer:
        stp     d8, d9, [sp, #-64]!
        stp     d10, d11, [sp, #16]
        stp     d12, d13, [sp, #32]
        stp     d14, d15, [sp, #48]
        smstart
        zero    {za}
        ptrue   p0.s
        whilelt p1.s, xzr, x5
        cntw    x6                                  // S
        mov     w12, #0
        mov     x7, #0                              // element offset of row w12
1:      ld1w    {za0h.s[w12, 0]}, p0/z, [x2, x7, lsl #2]
        add     x7, x7, x6
        add     w12, w12, #1
        cmp     w12, w6
        b.lo    1b
        mov     x7, #0
        cbz     x4, 3f
2:      ld1w    {z0.s}, p0/z, [x0]                  // a row: immediate form, addvl steps
        addvl   x0, x0, #1
        ld1w    {z1.s}, p1/z, [x1, x7, lsl #2]      // b row: scalar+scalar form
        add     x7, x7, x6
        fmopa   za0.s, p0/m, p1/m, z0.s, z1.s
        subs    x4, x4, #1
        b.ne    2b
3:      mov     w12, #0
        mov     x7, #0
4:      st1w    {za0h.s[w12, 0]}, p1, [x2, x7, lsl #2]
        mova    z2.s, p0/m, za0v.s[w12, 0]
        st1w    {z2.s}, p0, [x3, x7, lsl #2]
        add     x7, x7, x6
        add     w12, w12, #1
        cmp     w12, w6
        b.lo    4b
        rdsvl   x0, #1
        smstop
        ldp     d14, d15, [sp, #48]
        ldp     d12, d13, [sp, #32]
        ldp     d10, d11, [sp, #16]
        ldp     d8, d9, [sp], #64
        ret
        .size enc_sme_outer, .-enc_sme_outer
        .section .note.GNU-stack,"",%progbits
