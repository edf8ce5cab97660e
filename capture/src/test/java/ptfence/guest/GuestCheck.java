package ptfence.guest;

/**
 * A check that runs inside a booted guest kernel ({@link GuestKernel.Check}: a script whose files come back) and is
 * judged here, on this machine, from those files. {@link GuestKernelTest} boots each kernel once for all of them.
 */
public interface GuestCheck {
    /**
     * What this check runs in the guest, or null for a check judged from another check's run (a lane of the shared
     * churn under one ptrec: one ptrec start, minutes under TCG, for every churn).
     */
    GuestKernel.Check check();

    /** The test's name (the folder its files are in, where it runs a part of its own). */
    default String name() {
        return check().name();
    }

    /** Asserts on what the check left in {@code boot.dir(...)}. */
    void verify(GuestKernel.Boot boot) throws Exception;
}
