/* prog_attach_regs's spin (prog_attach_regs.c): the floating-point and
 * vector state loaded from IN, held while a loop of N turns runs, and
 * stored to OUT; the control words are then set back to their defaults.
 *
 * spin_avx(in, out, n): ymm0-15; spin_sse(in, out, n): xmm0-15. IN and
 * OUT are a regs: 16 registers of 32 bytes (16 used without AVX), two
 * doubles for the x87 stack at 512, MXCSR at 528, the x87 control word at
 * 532. Leaf functions: no frame of their own. x86-64. */
        .set X87, 512
        .set MXCSR, 528
        .set FCW, 532

        .macro spin_body load, store, reg
        ldmxcsr MXCSR(%rdi)
        fldcw FCW(%rdi)
        fldl X87+8(%rdi)
        fldl X87(%rdi)
        .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
        \load \i*32(%rdi), %\reg\i
        .endr
1:      dec %rdx
        jnz 1b
        .irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
        \store %\reg\i, \i*32(%rsi)
        .endr
        fstpl X87(%rsi)
        fstpl X87+8(%rsi)
        stmxcsr MXCSR(%rsi)
        fnstcw FCW(%rsi)
        movl $0x1f80, -4(%rsp)
        ldmxcsr -4(%rsp)
        movw $0x037f, -6(%rsp)
        fldcw -6(%rsp)
        .endm

        .text
        .globl spin_avx
        .type spin_avx, @function
spin_avx:
        .cfi_startproc
        spin_body vmovdqu, vmovdqu, ymm
        vzeroupper
        ret
        .cfi_endproc
        .size spin_avx, . - spin_avx

        .globl spin_sse
        .type spin_sse, @function
spin_sse:
        .cfi_startproc
        spin_body movdqu, movdqu, xmm
        ret
        .cfi_endproc
        .size spin_sse, . - spin_sse

        .section .note.GNU-stack, "", @progbits
