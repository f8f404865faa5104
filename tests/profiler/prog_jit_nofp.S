/* prog_jit's functions that keep no frame record, with their call-frame
 * information (e2e.sh, jit): the stack through generated code that keeps
 * none either, as CPython 3.12's perf trampolines, where rbp holds data.
 *
 * nofp_outer(stub, callback): rbp set to a value that is no record, then
 * stub(?, ?, ?, callback), the callback in rcx as CPython passes its
 * evaluator to a trampoline. nofp_alloc(): malloc(4096). x86-64. */
        .text
        .globl nofp_outer
        .type nofp_outer, @function
nofp_outer:
        .cfi_startproc
        push %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        mov $0x1234, %ebp
        mov %rdi, %rax
        mov %rsi, %rcx
        call *%rax
        pop %rbp
        .cfi_def_cfa_offset 8
        ret
        .cfi_endproc
        .size nofp_outer, . - nofp_outer

        .globl nofp_alloc
        .type nofp_alloc, @function
nofp_alloc:
        .cfi_startproc
        sub $8, %rsp
        .cfi_def_cfa_offset 16
        mov $4096, %edi
        call malloc@PLT
        add $8, %rsp
        .cfi_def_cfa_offset 8
        ret
        .cfi_endproc
        .size nofp_alloc, . - nofp_alloc

        .section .note.GNU-stack, "", @progbits
