/* Functions whose first instructions the redirection moves (hotpatch.c):
 * a rip-relative load, a short conditional branch, a tail jump, a call,
 * VEX and endbr64 encodings; and two it must refuse: a loop back into
 * the first bytes, and a function shorter than a jump. Each NAME ends at
 * NAME_end (test_hotpatch.c). */
        .text
#define FUNC(name) .globl name; .type name, @function; .p2align 4; name:
#define END(name) .globl name##_end; name##_end: .size name, .-name

FUNC(hp_rip_load)               /* hp_counter + x */
        movl hp_counter(%rip), %eax
        addl %edi, %eax
        ret
END(hp_rip_load)

FUNC(hp_short_jcc)              /* x == 0 ? -1 : x + 1 */
        testl %edi, %edi
        je 1f
        leal 1(%rdi), %eax
        ret
1:      movl $-1, %eax
        ret
END(hp_short_jcc)

FUNC(hp_tail_jmp)               /* hp_rip_load(x), by a jmp rel32 */
        .byte 0xe9
        .long hp_rip_load - . - 4
END(hp_tail_jmp)

FUNC(hp_call)                   /* hp_helper(x) */
        pushq %rbp
        movq %rsp, %rbp
        call hp_helper
        popq %rbp
        ret
END(hp_call)

FUNC(hp_helper)                 /* x + 7 */
        leal 7(%rdi), %eax
        ret
END(hp_helper)

FUNC(hp_vex)                    /* x + 3, through xmm0 */
        vmovd %edi, %xmm0
        vmovd %xmm0, %eax
        addl $3, %eax
        ret
END(hp_vex)

FUNC(hp_endbr)                  /* x + 5 */
        endbr64
        leal 5(%rdi), %eax
        ret
END(hp_endbr)

FUNC(hp_far)                    /* x + 9, redirected to a wrapper out of reach */
        endbr64
        leal 9(%rdi), %eax
        ret
END(hp_far)

FUNC(hp_loop_back)              /* 1 + 2 + ... + x: its loop starts at byte 2 */
        xorl %eax, %eax
1:      addl %edi, %eax
        decl %edi
        jnz 1b
        ret
END(hp_loop_back)

FUNC(hp_too_short)              /* returns at once */
        ret
END(hp_too_short)

        .data
        .globl hp_counter
hp_counter:
        .long 100

        .section .note.GNU-stack,"",@progbits
