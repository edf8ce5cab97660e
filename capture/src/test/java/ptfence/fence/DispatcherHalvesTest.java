package ptfence.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The switch pokes Debian 6.1's XDP dispatcher made in the guest churn (static call trampoline, jmp rel32). */
class DispatcherHalvesTest {
    private static final long PAGE = 0xffffffffc0020c80L, SITE = 0xffffffff81e01330L;

    @Test
    void aJumpToAHalfIsASwitchToIt() {
        // e9 4b 01 22 3e at the site: jmp 0xffffffffc0021480, the page's second half (seen in the guest's archive)
        byte[] jmp = {(byte) 0xe9, 0x4b, 0x01, 0x22, 0x3e};
        assertEquals(0xffffffffc0021480L, DispatcherHalves.branchTarget(SITE, jmp));
        assertEquals(PAGE + 2048, DispatcherHalves.halfOf(PAGE, 4096, DispatcherHalves.branchTarget(SITE, jmp)));
        byte[] call = jmp.clone();
        call[0] = (byte) 0xe8;
        assertEquals(PAGE + 2048, DispatcherHalves.halfOf(PAGE, 4096, DispatcherHalves.branchTarget(SITE, call)));
        // back to the first half: rel32 2048 less
        byte[] first = {(byte) 0xe9, 0x4b, (byte) 0xf9, 0x21, 0x3e};
        assertEquals(PAGE, DispatcherHalves.halfOf(PAGE, 4096, DispatcherHalves.branchTarget(SITE, first)));
    }

    @Test
    void otherPokesAreNoSwitch() {
        assertEquals(0, DispatcherHalves.branchTarget(SITE, new byte[] {0x0f, 0x1f, 0x44, 0x00, 0x00})); // nop5
        assertEquals(0, DispatcherHalves.branchTarget(SITE, new byte[] {(byte) 0xcc}));                  // int3
        assertEquals(0, DispatcherHalves.halfOf(PAGE, 4096, PAGE + 100));     // into the middle of a half
        assertEquals(0, DispatcherHalves.halfOf(PAGE, 4096, PAGE + 4096));    // past the page
        assertEquals(0, DispatcherHalves.halfOf(PAGE, 4096, 0xffffffff81234560L)); // bpf_dispatcher_nop_func
    }
}
