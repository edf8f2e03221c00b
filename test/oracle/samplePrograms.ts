import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPILE_FLAGS, ToolTarget, hasTool, run, tool } from './binutils';

/**
 * Small programs compiled by the tests themselves, for both oracle targets and several DWARF
 * versions and optimisation levels. They complement the fixture firmware: they exist before the
 * fixtures are built, and they cover what the fixtures need not (DWARF 2/3/4, -O0, sources in a
 * subdirectory, an unsized assembly `_start`, weak aliases, functions removed by --gc-sections).
 * They also run under QEMU: a timer interrupt, calls, a tail call, recursion and a clean exit.
 */

/** Facts of the sample's source that the oracle tests check. */
export const SAMPLE_FACTS = {
  /** main calls leaf() directly 10 times and tail_caller() 10 times, which tail-calls leaf(). */
  leafCalls: 20,
  tailCallerCalls: 10,
  dispatchCalls: 8,
  /** main spins until the timer interrupt has run tick_work() at least this often. */
  minTicks: 3,
} as const;

const UTIL_H = `#ifndef UTIL_H
#define UTIL_H
static inline int clamp_add(int a, int b)
{
    int s = a + b;
    return s > 100000 ? 100000 : s;
}
#endif
`;

const HELPER_C = `#include "../util.h"

int helper_acc;

static int __attribute__((noinline)) scale(int x)
{
    return x * 3;
}

int helper_sum(const int *v, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        s = clamp_add(s, scale(v[i]));
    }
    helper_acc += s;
    return s;
}
`;

const MAIN_C = `#include <stdint.h>
#include "util.h"

int helper_sum(const int *v, int n);
void board_init(void);

volatile uint32_t sample_ticks;
static const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
int data_values[6] = {1, 2, 3, 4, 5, 6};

__attribute__((noipa)) int leaf(int x)
{
    return x * 7 + 1;
}

__attribute__((noipa)) int tail_caller(int x)
{
    return leaf(x ^ 5);
}

__attribute__((noipa)) int fib(int n)
{
    if (n < 2) {
        return n;
    }
    return fib(n - 1) + fib(n - 2);
}

__attribute__((noipa)) int dispatch(int op, int v)
{
    switch (op) {
    case 0: return v + 11;
    case 1: return v * 13;
    case 2: return v - 17;
    case 3: return v ^ 0x55;
    case 4: return v << 3;
    case 5: return v >> 1;
    case 6: return -v;
    default: return v;
    }
}

__attribute__((noipa)) void tick_work(void)
{
    sample_ticks = sample_ticks + 1;
}

__attribute__((noipa)) int spin_work(int x)
{
    return (x >> 3) ^ 0x1234;
}

__attribute__((noipa)) int unused_fn(int x)
{
    return x * x + 42;
}

int main(void)
{
    int s = 0;

    board_init();
    for (int i = 0; i < 10; i++) {
        s += leaf(i);
    }
    for (int i = 0; i < 10; i++) {
        s += tail_caller(i);
    }
    s += fib(12);
    for (int i = 0; i < 8; i++) {
        s += dispatch(i, table[i]);
    }
    s += helper_sum(data_values, 6);
    while (sample_ticks < 3) {
        s += spin_work(s);
    }
    return clamp_add(s, 3) & 0xff;
}
`;

const RV_START_S = `    .section .text.start, "ax"
    .globl _start
_start:
    la sp, __stack_top
    call main
    call board_exit
1:  j 1b
`;

const RV_BOARD_C = `#include <stdint.h>
#define MTIME (*(volatile uint32_t *)0x0200bff8)
#define MTIMECMP_LO (*(volatile uint32_t *)0x02004000)
#define MTIMECMP_HI (*(volatile uint32_t *)0x02004004)
void tick_work(void);

static void arm_timer(void)
{
    MTIMECMP_HI = 0xffffffffu;
    MTIMECMP_LO = MTIME + 100; /* 10 MHz mtime: 100 ticks are 10,000 instructions */
    MTIMECMP_HI = 0;
}

__attribute__((interrupt("machine"), aligned(4))) void trap_entry(void)
{
    arm_timer();
    tick_work();
}

void board_init(void)
{
    __asm__ volatile("csrw mtvec, %0" ::"r"(trap_entry));
    arm_timer();
    __asm__ volatile("csrs mie, %0" ::"r"(1u << 7));
    __asm__ volatile("csrsi mstatus, 8");
}

static void uart_putc(char c)
{
    *(volatile uint8_t *)0x10000000 = (uint8_t)c; /* NS16550 THR: QEMU takes it at once */
}

/* Prints the hardware's own instruction count (exact under -icount shift=0) for the oracle
 * tests to compare with the trace; the label names the instruction that reads it. */
__attribute__((noreturn)) void board_exit(int status)
{
    uint32_t n;

    (void)status;
    __asm__ volatile("csrci mstatus, 8");
    __asm__ volatile(".globl sample_minstret_read\\nsample_minstret_read: csrr %0, minstret" : "=r"(n));
    for (const char *p = "minstret=0x"; *p != 0; p++) {
        uart_putc(*p);
    }
    for (int i = 28; i >= 0; i -= 4) {
        uart_putc("0123456789abcdef"[(n >> i) & 15u]);
    }
    uart_putc('\\n');
    *(volatile uint32_t *)0x100000 = 0x5555; /* sifive_test: pass */
    for (;;) {
    }
}
`;

const RV_LD = `ENTRY(_start)
MEMORY { RAM (rwx) : ORIGIN = 0x80000000, LENGTH = 1M }
SECTIONS {
  .text : { *(.text.start) *(.text .text.*) } > RAM
  .rodata : { *(.rodata .rodata.* .srodata .srodata.*) } > RAM
  .data : { *(.data .data.* .sdata .sdata.*) } > RAM
  .bss : { *(.bss .bss.* .sbss .sbss.* COMMON) } > RAM
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
}
`;

const CM_START_S = `    .syntax unified
    .thumb
    .section .vectors, "a"
    .word __stack_top
    .word _start + 1
    .word NMI_Handler
    .word HardFault_Handler
    .rept 11
    .word default_handler
    .endr
    .word SysTick_Handler

    .text
    .globl _start
_start:
    bl main
    bl board_exit
1:  b 1b
`;

const CM_BOARD_C = `#include <stdint.h>
#define SYST_CSR (*(volatile uint32_t *)0xE000E010)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018)
void tick_work(void);
extern uint32_t __data_load[], __data_start[], __data_end[];

void default_handler(void)
{
    for (;;) {
    }
}
void NMI_Handler(void) __attribute__((weak, alias("default_handler")));
void HardFault_Handler(void) __attribute__((weak, alias("default_handler")));

void SysTick_Handler(void)
{
    tick_work();
}

void board_init(void)
{
    for (uint32_t *s = __data_load, *d = __data_start; d < __data_end;) {
        *d++ = *s++;
    }
    SYST_RVR = 250; /* 25 MHz core clock: every 10,000 instructions */
    SYST_CVR = 0;
    SYST_CSR = 7;
}

__attribute__((noreturn)) void board_exit(int status)
{
    register uint32_t op __asm__("r0") = 0x18;      /* SYS_EXIT */
    register uint32_t arg __asm__("r1") = 0x20026;  /* ADP_Stopped_ApplicationExit */
    (void)status;
    SYST_CSR = 0;
    __asm__ volatile("bkpt 0xab" ::"r"(op), "r"(arg));
    for (;;) {
    }
}
`;

const CM_LD = `ENTRY(_start)
MEMORY { FLASH (rx) : ORIGIN = 0x0, LENGTH = 4M  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 64K }
SECTIONS {
  .vectors : { KEEP(*(.vectors)) } > FLASH
  .text : { *(.text .text.*) } > FLASH
  .rodata : { *(.rodata .rodata.*) } > FLASH
  .data : { __data_start = .; *(.data .data.*) . = ALIGN(4); __data_end = .; } > RAM AT > FLASH
  __data_load = LOADADDR(.data);
  .bss : { *(.bss .bss.* COMMON) } > RAM
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
}
`;

export interface SampleVariant {
  name: string;
  flags: string[];
  /** Whether the variant is the one tests run under QEMU. */
  runnable?: boolean;
}

export const SAMPLE_VARIANTS: readonly SampleVariant[] = [
  { name: 'o2', flags: ['-O2', '-g'], runnable: true },
  { name: 'o0-dwarf4', flags: ['-O0', '-gdwarf-4'] },
  { name: 'os-dwarf2', flags: ['-Os', '-gdwarf-2'] },
  { name: 'o2-dwarf3', flags: ['-O2', '-gdwarf-3'] },
  { name: 'o1-dwarf5-gc', flags: ['-O1', '-gdwarf-5', '-ffunction-sections', '-Wl,--gc-sections'] },
  { name: 'nodebug', flags: ['-O2'] },
];

export interface SampleBuild {
  target: ToolTarget;
  variant: string;
  elf: string;
  /** The directory the sources were compiled in (DW_AT_comp_dir). */
  dir: string;
  runnable: boolean;
}

export function canBuildSamples(target: ToolTarget): boolean {
  return hasTool(tool(target, 'gcc'));
}

/** Writes the sources and builds every variant for `targets` into a fresh temporary directory. */
export function buildSamples(
  targets: readonly ToolTarget[],
  variants: readonly SampleVariant[] = SAMPLE_VARIANTS,
): SampleBuild[] {
  const root = mkdtempSync(join(tmpdir(), 'cyclelens-samples-'));
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  const builds: SampleBuild[] = [];
  for (const target of targets) {
    const dir = join(root, target);
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'util.h'), UTIL_H);
    writeFileSync(join(dir, 'sub', 'helper.c'), HELPER_C);
    writeFileSync(join(dir, 'main.c'), MAIN_C);
    writeFileSync(join(dir, 'start.S'), target === 'rv32' ? RV_START_S : CM_START_S);
    writeFileSync(join(dir, 'board.c'), target === 'rv32' ? RV_BOARD_C : CM_BOARD_C);
    writeFileSync(join(dir, 'link.ld'), target === 'rv32' ? RV_LD : CM_LD);
    for (const v of variants) {
      const elf = join(dir, `${v.name}.elf`);
      // Relative source paths on purpose: the line tables then need DW_AT_comp_dir / directory 0.
      run('sh', [
        '-c',
        `cd '${dir}' && ` +
          [
            tool(target, 'gcc'),
            ...COMPILE_FLAGS[target],
            ...v.flags,
            '-nostdlib',
            '-ffreestanding',
            '-Wl,--no-warn-rwx-segments',
            '-T',
            'link.ld',
            'start.S',
            'main.c',
            'board.c',
            'sub/helper.c',
            '-o',
            elf,
          ].join(' '),
      ]);
      builds.push({ target, variant: v.name, elf, dir, runnable: v.runnable === true });
    }
  }
  return builds;
}
