/* Two functions whose DWARF is written here by hand, each unit with a line
 * table that the tracer's own reader (src/tracer/symbols/dwline.c) refuses, so that
 * naming their code takes libdw's way (symbols.c's fallback):
 *
 * - refused_seq_alloc (unit refused_seq.c): its sequence goes back to a
 *   lower address (the rows of the call come after the row past it); the
 *   call is in helper_a, inlined there from helper.h, called at
 *   refused_seq.c:11:3 (a file name looked up by libdw's file list);
 * - refused_define_alloc (unit refused_define.c): its table defines a file
 *   with DW_LNE_define_file (extra.h), and .debug_aranges does not list
 *   the unit (units.c finds it, and libdw's search must be asked in it).
 *
 * Each calls malloc with its argument. The names a trace must give at the
 * calls (e2e.sh, refused-lines): helper_a at /src/refused/helper.h:5:7
 * inlined in refused_seq_alloc at /src/refused/refused_seq.c:11:3, and
 * refused_define_alloc at /src/refused/extra.h:7:9. x86-64, DWARF 4. */

#define DW_LNE(op, len) .byte 0; .uleb128 len; .byte op
#define SET_ADDRESS(a) DW_LNE(2, 9); .quad a
#define END_SEQUENCE DW_LNE(1, 1)
#define COPY .byte 1
#define ADVANCE_LINE(n) .byte 3; .sleb128 n
#define SET_FILE(n) .byte 4; .uleb128 n
#define SET_COLUMN(n) .byte 5; .uleb128 n

/* A function calling malloc with its argument; its labels: entry, the
 * call, past the call (the call's rows and inlined range end there), end. */
        .macro alloc_function name, lo, call, after, hi
        .globl \name
        .type \name, @function
\name:
\lo:
        .cfi_startproc
        push %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        mov %rsp, %rbp
        .cfi_def_cfa_register %rbp
\call:
        call malloc@PLT
        nop
\after:
        pop %rbp
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
\hi:
        .size \name, . - \name
        .endm

        .text
        alloc_function refused_seq_alloc, .LA_lo, .LA_call, .LA_after, .LA_hi
        alloc_function refused_define_alloc, .LB_lo, .LB_call, .LB_after, .LB_hi

/* ---- abbreviations (DWARF 4: tag, children, then attribute-form pairs) ---- */
        .section .debug_abbrev, "", @progbits
.Labbrev:
        .uleb128 1                      /* the unit */
        .uleb128 0x11                   /* DW_TAG_compile_unit */
        .byte 1
        .uleb128 0x25; .uleb128 0x08    /* DW_AT_producer, string */
        .uleb128 0x13; .uleb128 0x0b    /* DW_AT_language, data1 */
        .uleb128 0x03; .uleb128 0x08    /* DW_AT_name, string */
        .uleb128 0x1b; .uleb128 0x08    /* DW_AT_comp_dir, string */
        .uleb128 0x11; .uleb128 0x01    /* DW_AT_low_pc, addr */
        .uleb128 0x12; .uleb128 0x07    /* DW_AT_high_pc, data8 (a length) */
        .uleb128 0x10; .uleb128 0x17    /* DW_AT_stmt_list, sec_offset */
        .byte 0, 0
        .uleb128 2                      /* a function with children */
        .uleb128 0x2e                   /* DW_TAG_subprogram */
        .byte 1
        .uleb128 0x3f; .uleb128 0x19    /* DW_AT_external, flag_present */
        .uleb128 0x03; .uleb128 0x08
        .uleb128 0x11; .uleb128 0x01
        .uleb128 0x12; .uleb128 0x07
        .byte 0, 0
        .uleb128 3                      /* an inline function's abstract instance */
        .uleb128 0x2e
        .byte 0
        .uleb128 0x03; .uleb128 0x08
        .uleb128 0x20; .uleb128 0x0b    /* DW_AT_inline, data1 */
        .byte 0, 0
        .uleb128 4                      /* an inlined call */
        .uleb128 0x1d                   /* DW_TAG_inlined_subroutine */
        .byte 0
        .uleb128 0x31; .uleb128 0x13    /* DW_AT_abstract_origin, ref4 */
        .uleb128 0x11; .uleb128 0x01
        .uleb128 0x12; .uleb128 0x07
        .uleb128 0x58; .uleb128 0x0b    /* DW_AT_call_file, data1 */
        .uleb128 0x59; .uleb128 0x0b    /* DW_AT_call_line, data1 */
        .uleb128 0x57; .uleb128 0x0b    /* DW_AT_call_column, data1 */
        .byte 0, 0
        .uleb128 5                      /* a function without children */
        .uleb128 0x2e
        .byte 0
        .uleb128 0x3f; .uleb128 0x19
        .uleb128 0x03; .uleb128 0x08
        .uleb128 0x11; .uleb128 0x01
        .uleb128 0x12; .uleb128 0x07
        .byte 0, 0
        .byte 0

/* ---- the units ---- */
        .section .debug_info, "", @progbits
.LinfoA:
        .long .LinfoA_end - .LinfoA_start
.LinfoA_start:
        .value 4
        .long .Labbrev
        .byte 8
        .uleb128 1
        .string "hand-written DWARF (memtrace-c tests)"
        .byte 0x0c                      /* DW_LANG_C99 */
        .string "refused_seq.c"
        .string "/src/refused"
        .quad .LA_lo
        .quad .LA_hi - .LA_lo
        .long .LlineA
.LA_helper:
        .uleb128 3
        .string "helper_a"
        .byte 3                         /* DW_INL_declared_inlined */
        .uleb128 2
        .string "refused_seq_alloc"
        .quad .LA_lo
        .quad .LA_hi - .LA_lo
        .uleb128 4
        .long .LA_helper - .LinfoA
        .quad .LA_call
        .quad .LA_after - .LA_call
        .byte 1, 11, 3                  /* refused_seq.c:11:3 */
        .byte 0                         /* the function's children end */
        .byte 0                         /* the unit's */
.LinfoA_end:

.LinfoB:
        .long .LinfoB_end - .LinfoB_start
.LinfoB_start:
        .value 4
        .long .Labbrev
        .byte 8
        .uleb128 1
        .string "hand-written DWARF (memtrace-c tests)"
        .byte 0x0c
        .string "refused_define.c"
        .string "/src/refused"
        .quad .LB_lo
        .quad .LB_hi - .LB_lo
        .long .LlineB
        .uleb128 5
        .string "refused_define_alloc"
        .quad .LB_lo
        .quad .LB_hi - .LB_lo
        .byte 0
.LinfoB_end:

/* ---- .debug_aranges: the first unit only ---- */
        .section .debug_aranges, "", @progbits
        .long .Laranges_end - .Laranges_start
.Laranges_start:
        .value 2
        .long .LinfoA
        .byte 8, 0
        .long 0                         /* pads the tuples to 16 bytes */
        .quad .LA_lo
        .quad .LA_hi - .LA_lo
        .quad 0, 0
.Laranges_end:

/* ---- the line tables (version 4) ---- */
#define LINE_HEADER_FIELDS                                                      \
        .byte 1;  /* minimum_instruction_length */                             \
        .byte 1;  /* maximum_operations_per_instruction */                     \
        .byte 1;  /* default_is_stmt */                                        \
        .byte -5; /* line_base */                                              \
        .byte 14; /* line_range */                                             \
        .byte 13; /* opcode_base */                                            \
        .byte 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1

        .section .debug_line, "", @progbits
.LlineA:
        .long .LlineA_end - .LlineA_start
.LlineA_start:
        .value 4
        .long .LlineA_prog - .LlineA_hdr
.LlineA_hdr:
        LINE_HEADER_FIELDS
        .string "/src/refused"
        .byte 0
        .string "refused_seq.c"
        .uleb128 1, 0, 0
        .string "helper.h"
        .uleb128 1, 0, 0
        .byte 0
.LlineA_prog:
        SET_ADDRESS(.LA_lo)
        ADVANCE_LINE(9)                 /* refused_seq.c:10 */
        COPY
        SET_ADDRESS(.LA_after)
        ADVANCE_LINE(3)                 /* refused_seq.c:13 */
        COPY
        SET_ADDRESS(.LA_call)           /* back, to the call: helper.h:5:7 */
        SET_FILE(2)
        ADVANCE_LINE(-8)
        SET_COLUMN(7)
        COPY
        SET_ADDRESS(.LA_hi)
        END_SEQUENCE
.LlineA_end:

.LlineB:
        .long .LlineB_end - .LlineB_start
.LlineB_start:
        .value 4
        .long .LlineB_prog - .LlineB_hdr
.LlineB_hdr:
        LINE_HEADER_FIELDS
        .string "/src/refused"
        .byte 0
        .string "refused_define.c"
        .uleb128 1, 0, 0
        .byte 0
.LlineB_prog:
        SET_ADDRESS(.LB_lo)
        ADVANCE_LINE(19)                /* refused_define.c:20 */
        COPY
        DW_LNE(3, 12)                   /* DW_LNE_define_file: file 2 */
        .string "extra.h"
        .uleb128 1, 0, 0
        SET_ADDRESS(.LB_call)           /* extra.h:7:9 */
        SET_FILE(2)
        ADVANCE_LINE(-13)
        SET_COLUMN(9)
        COPY
        SET_ADDRESS(.LB_after)          /* refused_define.c:23 */
        SET_FILE(1)
        ADVANCE_LINE(16)
        SET_COLUMN(0)
        COPY
        SET_ADDRESS(.LB_hi)
        END_SEQUENCE
.LlineB_end:

        .section .note.GNU-stack, "", @progbits
