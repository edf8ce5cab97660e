package ptfence.guest;

/**
 * A check that runs inside a booted guest kernel ({@link GuestKernel.Check}: a script whose files come back) and is
 * judged here, on this machine, from those files. {@link GuestKernelTest} boots each kernel once for all of them.
 */
public interface GuestCheck {
    GuestKernel.Check check();

    /** Asserts on what the check left in {@code boot.dir(check().name())}. */
    void verify(GuestKernel.Boot boot) throws Exception;
}
