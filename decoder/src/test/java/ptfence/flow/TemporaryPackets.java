package ptfence.flow;

import java.lang.reflect.Constructor;
import ptfence.ptdecode.FlowCommand;

/** Until the packet layer lands on main, tests use a local, uncommitted scaffold if present. */
final class TemporaryPackets {
    private TemporaryPackets() {}

    static void install() {
        try {
            Constructor<?> c = Class.forName("ptfence.flow.ScaffoldPackets").getDeclaredConstructor(byte[].class);
            c.setAccessible(true);
            FlowCommand.packetSource = b -> {
                try {
                    return (PacketInput) c.newInstance((Object) b);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            };
        } catch (ReflectiveOperationException e) {
            org.junit.jupiter.api.Assumptions.assumeTrue(false, "no packet layer yet");
        }
    }
}
