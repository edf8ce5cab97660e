/* Loads one socket filter through the ia32 compat entry (int 0x80, bpf = 357) and closes it at once.
 * Built and run by TextFenceTest: the LOAD hook must see compat loads too. Prints the fd. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    /* ia32 syscalls take 32-bit pointers: everything lives below 4 GiB. */
    unsigned char *m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (m == MAP_FAILED) return 2;
    unsigned char insns[16] = {0xb7, 0, 0, 0, 77, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0}; /* r0 = 77; exit */
    memset(m, 0, 4096);
    memcpy(m + 512, insns, sizeof insns);
    strcpy((char *)m + 600, "GPL");
    *(uint32_t *)(m + 0) = 1;                                 /* BPF_PROG_TYPE_SOCKET_FILTER */
    *(uint32_t *)(m + 4) = 2;                                 /* insn_cnt */
    *(uint64_t *)(m + 8) = (uint64_t)(uintptr_t)(m + 512);    /* insns */
    *(uint64_t *)(m + 16) = (uint64_t)(uintptr_t)(m + 600);   /* license */
    strncpy((char *)m + 48, argc > 1 ? argv[1] : "compat32", 15);
    long fd;
    __asm__ volatile("int $0x80" : "=a"(fd) : "a"(357), "b"(5), "c"((uint32_t)(uintptr_t)m), "d"(144) : "memory");
    if (fd < 0) return 3;
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(6), "b"(fd) : "memory");   /* close */
    printf("%ld\n", fd);
    return 0;
}
