/* A shared library made of symbols only, for test_symtab: the symbol
 * layouts where dwfl_module_addrname's rules differ from "the nearest
 * symbol below": nested functions, aliases of different sizes and
 * bindings, sizeless labels after and inside sized symbols, locals under
 * globals, labels at the end of a section. test_symtab asks about every
 * address of this module. (x86-64 assembler syntax; bytes are nops.) */
#if defined(__x86_64__)
__asm__(
    ".text\n"
    /* nested: outer 64 bytes, inner global 16 bytes at +16 */
    ".globl c_outer\n .type c_outer,@function\n .size c_outer,64\n"
    ".globl c_inner\n .type c_inner,@function\n .size c_inner,16\n"
    "c_outer: .fill 16,1,0\n"
    "c_inner: .fill 48,1,0\n"
    /* same start, same binding, different sizes (both orders) */
    ".globl c_big\n .type c_big,@function\n .size c_big,32\n"
    ".globl c_small\n .type c_small,@function\n .size c_small,16\n"
    "c_big: c_small: .fill 32,1,0\n"
    ".globl c_small2\n .type c_small2,@function\n .size c_small2,16\n"
    ".globl c_big2\n .type c_big2,@function\n .size c_big2,32\n"
    "c_small2: c_big2: .fill 32,1,0\n"
    /* same start and size: weak, global, local */
    ".weak c_weak\n .type c_weak,@function\n .size c_weak,16\n"
    ".globl c_strong\n .type c_strong,@function\n .size c_strong,16\n"
    ".type c_local,@function\n .size c_local,16\n"
    "c_weak: c_strong: c_local: .fill 16,1,0\n"
    /* weak outer, global inner; global outer, weak inner */
    ".weak c_wouter\n .type c_wouter,@function\n .size c_wouter,48\n"
    ".globl c_ginner\n .type c_ginner,@function\n .size c_ginner,16\n"
    "c_wouter: .fill 16,1,0\n c_ginner: .fill 32,1,0\n"
    ".globl c_gouter\n .type c_gouter,@function\n .size c_gouter,48\n"
    ".weak c_winner\n .type c_winner,@function\n .size c_winner,16\n"
    "c_gouter: .fill 16,1,0\n c_winner: .fill 32,1,0\n"
    /* more of these: the linker orders globals by hash, and the result
     * depends on which of the two is read first */
    ".globl c_go1\n .type c_go1,@function\n .size c_go1,48\n"
    ".weak c_wi1\n .type c_wi1,@function\n .size c_wi1,16\n"
    "c_go1: .fill 16,1,0\n c_wi1: .fill 32,1,0\n"
    ".globl c_go2\n .type c_go2,@function\n .size c_go2,48\n"
    ".weak c_wi2\n .type c_wi2,@function\n .size c_wi2,16\n"
    "c_go2: .fill 16,1,0\n c_wi2: .fill 32,1,0\n"
    ".globl c_go3\n .type c_go3,@function\n .size c_go3,48\n"
    ".weak c_wi3\n .type c_wi3,@function\n .size c_wi3,16\n"
    "c_go3: .fill 16,1,0\n c_wi3: .fill 32,1,0\n"
    ".globl c_go4\n .type c_go4,@function\n .size c_go4,48\n"
    ".weak c_wi4\n .type c_wi4,@function\n .size c_wi4,16\n"
    "c_go4: .fill 16,1,0\n c_wi4: .fill 32,1,0\n"
    ".globl c_go5\n .type c_go5,@function\n .size c_go5,48\n"
    ".weak c_wi5\n .type c_wi5,@function\n .size c_wi5,16\n"
    "c_go5: .fill 16,1,0\n c_wi5: .fill 32,1,0\n"
    ".globl c_go6\n .type c_go6,@function\n .size c_go6,48\n"
    ".weak c_wi6\n .type c_wi6,@function\n .size c_wi6,16\n"
    "c_go6: .fill 16,1,0\n c_wi6: .fill 32,1,0\n"
    /* global outer, local inner: the locals are not read */
    ".globl c_gouter2\n .type c_gouter2,@function\n .size c_gouter2,48\n"
    ".type c_linner,@function\n .size c_linner,16\n"
    "c_gouter2: .fill 16,1,0\n c_linner: .fill 32,1,0\n"
    /* a global label, then a local sized function after it, then a gap */
    ".globl c_glabel\n"
    "c_glabel: .fill 16,1,0\n"
    ".type c_lfunc,@function\n .size c_lfunc,16\n"
    "c_lfunc: .fill 32,1,0\n"
    /* a global label exactly at a local function's start */
    ".globl c_glabel2\n .type c_lfunc2,@function\n .size c_lfunc2,16\n"
    "c_glabel2: c_lfunc2: .fill 32,1,0\n"
    /* labels: local after a global label; two labels at one place; a
     * label inside a sized function; a label right after a function */
    ".globl c_glabel3\n c_glabel3: .fill 16,1,0\n"
    "c_llabel3: .fill 16,1,0\n"
    ".globl c_lab_a\n .globl c_lab_b\n c_lab_a: c_lab_b: .fill 16,1,0\n"
    "c_lab_c: c_lab_d: .fill 16,1,0\n"
    ".globl c_host\n .type c_host,@function\n .size c_host,32\n"
    "c_host: .fill 8,1,0\n .globl c_inside\n c_inside: .fill 24,1,0\n"
    ".globl c_after\n c_after: .fill 16,1,0\n"
    /* a sized symbol of no type, an object in text, a zero-sized function */
    ".globl c_notype\n .size c_notype,8\n c_notype: .fill 16,1,0\n"
    ".globl c_obj\n .type c_obj,@object\n .size c_obj,8\n c_obj: .fill 16,1,0\n"
    ".globl c_zero\n .type c_zero,@function\n .size c_zero,0\n c_zero: .fill 16,1,0\n"
    /* a weak label and a global label at one place, then locals */
    ".weak c_wlab\n .globl c_glab\n c_wlab: c_glab: .fill 16,1,0\n"
    ".type c_llast,@function\n .size c_llast,8\n c_llast: .fill 16,1,0\n"
    /* absolute symbols, one at the top of the address space (the table's
     * sort by start then spans all 64 bits) */
    ".globl c_abs\n .set c_abs, 0x1234\n"
    ".globl c_abs_top\n .set c_abs_top, 0xfffffffffffff000\n"
    /* labels ending read-only data and data: addresses past them lie in
     * other sections */
    ".section .rodata\n .globl c_ro\n .type c_ro,@object\n .size c_ro,8\n c_ro: .fill 8,1,1\n"
    ".globl c_ro_end\n c_ro_end: .fill 8,1,1\n"
    ".data\n .globl c_data\n .type c_data,@object\n .size c_data,8\n c_data: .fill 8,1,1\n"
    "c_data_end: .fill 8,1,1\n"
    ".text\n");
#endif
