package ptfence.ptarchive;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.TimeUnit;

/**
 * The hook {@code ptarchive show --disasm} uses to list code. The archive module knows nothing of x86,
 * so a disassembler comes from elsewhere: a {@link ServiceLoader} provider on the class path (the decoder
 * module may register its capstone lister under META-INF/services/ptfence.ptarchive.Disassembler), else
 * GNU objdump if it is installed.
 */
public interface Disassembler {
    /** The listing of this code as if loaded at this address, or empty if it cannot. */
    Optional<String> list(byte[] code, long address);

    /** Name shown in the listing header. */
    String name();

    /** The first provider on the class path, else objdump. */
    static Disassembler find() {
        return ServiceLoader.load(Disassembler.class).findFirst().orElseGet(Objdump::new);
    }

    /** Lists through {@code objdump -D -b binary -m i386:x86-64}. */
    final class Objdump implements Disassembler {
        @Override
        public String name() {
            return "objdump";
        }

        @Override
        public Optional<String> list(byte[] code, long address) {
            Path tmp = null;
            try {
                tmp = Files.createTempFile("ptarchive-", ".bin");
                Files.write(tmp, code);
                Process p = new ProcessBuilder("objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                        "--adjust-vma=0x" + Long.toHexString(address), tmp.toString())
                        .redirectErrorStream(true).start();
                String text = new String(p.getInputStream().readAllBytes());
                if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                    return Optional.empty();
                }
                int start = text.indexOf("<.data>:");
                return Optional.of(start < 0 ? text : text.substring(text.indexOf('\n', start) + 1));
            } catch (IOException e) {
                return Optional.empty();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Optional.empty();
            } finally {
                if (tmp != null) {
                    try {
                        Files.deleteIfExists(tmp);
                    } catch (IOException ignored) {
                        // a temp file left behind is harmless
                    }
                }
            }
        }
    }
}
