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

/* remap_caller(f): f(), with a frame record and nothing addressed
 * relative to itself, so that a second mapping of this file's page runs
 * it as well (prog_jit maps it again, as V8 maps node's builtins). */
        .globl remap_caller
        .type remap_caller, @function
remap_caller:
        .cfi_startproc
        push %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        mov %rsp, %rbp
        .cfi_def_cfa_register %rbp
        call *%rdi
        pop %rbp
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
        .size remap_caller, . - remap_caller

        .section .note.GNU-stack, "", @progbits
