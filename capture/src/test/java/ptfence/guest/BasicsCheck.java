package ptfence.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;

/**
 * The guest itself: the kernel asked for runs, this machine's JVM and the project's classes start in it, and the
 * interfaces the fence's guest checks rely on are there (/proc/kcore, BTF, tracefs, bpffs).
 */
final class BasicsCheck implements GuestCheck {
    @Override
    public GuestKernel.Check check() {
        return new GuestKernel.Check("basics", 120, String.join("\n",
                "uname -r > uname",
                "head -c 4 /proc/kcore | od -An -c | tr -d ' ' > kcore",
                "test -s /sys/kernel/btf/vmlinux && echo btf > btf",
                "test -d /sys/kernel/tracing/events && echo tracefs > tracefs",
                GuestKernel.java("ptfence.guest.GuestEcho", "hello from") + " > echo",
                ""));
    }

    @Override
    public void verify(GuestKernel.Boot boot) throws Exception {
        String why = boot.describe("basics");
        assertEquals(0, boot.rc("basics"), why);
        assertEquals(boot.kernel().release(), Files.readString(boot.dir("basics").resolve("uname")).strip(), why);
        assertEquals("177ELF", Files.readString(boot.dir("basics").resolve("kcore")).strip(), "/proc/kcore: " + why);
        assertTrue(Files.exists(boot.dir("basics").resolve("btf")), "no BTF: " + why);
        assertTrue(Files.exists(boot.dir("basics").resolve("tracefs")), "no tracefs: " + why);
        assertEquals("hello from " + boot.kernel().release(),
                Files.readString(boot.dir("basics").resolve("echo")).strip(), why);
    }
}
