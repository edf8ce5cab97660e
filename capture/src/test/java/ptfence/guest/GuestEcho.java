package ptfence.guest;

/** Run in the guest by {@link BasicsCheck}: prints its arguments and the kernel release the JVM sees. */
public final class GuestEcho {
    private GuestEcho() {}

    public static void main(String[] args) {
        System.out.println(String.join(" ", args) + " " + System.getProperty("os.version"));
    }
}
