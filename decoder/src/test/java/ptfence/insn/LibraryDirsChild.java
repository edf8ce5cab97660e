package ptfence.insn;

/** A JVM for {@link LibraryDirsTest}: "decoder" disassembles through X86Decoder; "bare" loads libc by JNA alone. */
public final class LibraryDirsChild {
    private LibraryDirsChild() {
    }

    public static void main(String[] args) {
        if (args[0].equals("bare")) {
            com.sun.jna.NativeLibrary.getInstance("c");
            System.out.println("ok");
            return;
        }
        X86Decoder d = new X86Decoder();
        byte[] code = {(byte) 0x48, (byte) 0x89, (byte) 0xe5, (byte) 0xc3}; // mov %rsp,%rbp; ret
        int n = d.batch(code, 0, code.length, ExecMode.BITS64);
        String text = d.text(code, 0, code.length, ExecMode.BITS64, 0x1000);
        System.out.println(n == 2 && text.contains("mov") ? "ok" : "decoded " + n + ": " + text);
    }
}
