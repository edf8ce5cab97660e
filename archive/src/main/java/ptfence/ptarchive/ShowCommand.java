package ptfence.ptarchive;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import ptfence.cli.BadInputException;
import ptfence.region.BpfMetadata;
import ptfence.region.FileMetadata;
import ptfence.region.Region;
import ptfence.region.RegionIndex;
import ptfence.store.Archive;
import ptfence.store.ContentKey;
import ptfence.store.ImageInfo;
import ptfence.store.Snapshot;
import ptfence.store.Table;

@Command(name = "show", mixinStandardHelpOptions = true, description = "Show an image (by content key or key prefix), or the regions with a name or id: "
        + "metadata, and with --bytes a hexdump, with --disasm a listing.",
        footer = {"", "Examples:",
                "  ptarchive show 3f9a1c0b2d4e                       an image by key prefix (8+ hex digits)",
                "  ptarchive show bpf_prog_6deef7357e7b4530_sys_enter --disasm",
                "  ptarchive show 1a2b3c4d5e6f7081 --bytes           a region by its 16-digit id",
                "",
                "--disasm lists through a Disassembler found on the class path (ServiceLoader), else GNU objdump;",
                "the archive itself knows nothing of x86.", ""})
final class ShowCommand extends ArchiveSubcommand implements Callable<Integer> {
    @Parameters(paramLabel = "KEY|NAME|ID", description = "Content key (or a prefix of 8+ hex digits), region name, or region id.")
    String what;
    @Option(names = "--bytes", description = "Hexdump the image.")
    boolean bytes;
    @Option(names = "--disasm", description = "Disassemble the image at the region's address.")
    boolean disasm;

    @Override
    public Integer call() {
        PrintWriter out = out();
        try (Archive a = openArchiveReadOnly()) {
            a.read(s -> {
                List<Region> regions = RegionIndex.byName(s, what);
                if (regions.isEmpty() && what.length() == 16 && ContentKey.isHex(what)) {
                    RegionIndex.get(s, Long.parseUnsignedLong(what, 16)).ifPresent(regions::add);
                }
                if (!regions.isEmpty()) {
                    for (Region r : regions) {
                        showRegion(s, r, out);
                    }
                    return null;
                }
                ContentKey key = resolveKey(s, what, a);
                ImageInfo info = s.imageInfo(key).orElseThrow();
                out.printf("image %s%n  length %d%n  first put %s%n", key.hex(), info.length(),
                        java.time.Instant.ofEpochMilli(info.firstPutMillis()));
                List<Region> users = RegionIndex.all(s, r -> r.key().equals(key));
                out.printf("  %d region(s)%n", users.size());
                users.forEach(r -> out.printf("    %s %s %s %s%n", r.idHex(), r.kind().name().toLowerCase(Locale.ROOT),
                        Units.address(r.address()), r.name()));
                dump(s.requireImage(key), users.isEmpty() ? 0 : users.get(0).address(), out);
                return null;
            });
        }
        out.flush();
        return 0;
    }

    private void showRegion(Snapshot s, Region r, PrintWriter out) {
        out.printf("region %s%n  name %s%n  kind %s%n  boot %s%n  address %s..%s (%d bytes)%n  valid %s..%s%n  key %s%n",
                r.idHex(), r.name(), r.kind().name().toLowerCase(Locale.ROOT), r.bootId(), Units.address(r.address()),
                Units.address(r.end()), r.length(), Units.time(r.validFrom()), Units.time(r.validTo()), r.key().hex());
        if (RegionIndex.withContent(s, r).metadata() instanceof BpfMetadata m) {
            out.printf("  bpf prog id %d, tag %s, name %s, type %d, uid %d, loaded %s%n", m.progId(), m.tag(), m.name(),
                    m.type(), m.uid(), Units.time(m.loadTime()));
            long[] ksyms = m.jitedKsyms();
            int[] lens = m.jitedFuncLens();
            for (int i = 0; i < ksyms.length; i++) {
                out.printf("    func %d at %s, %d bytes%n", i, Units.address(ksyms[i]), i < lens.length ? lens[i] : -1);
            }
            out.printf("    line info %d B (rec %d), jited line info %d B (rec %d), func info %d B (rec %d), "
                    + "BTF id %d %d B, xlated %d B%n", m.lineInfo().length, m.lineInfoRecSize(), m.jitedLineInfo().length,
                    m.jitedLineInfoRecSize(), m.funcInfo().length, m.funcInfoRecSize(), m.btfId(), m.btf().length,
                    m.xlatedInsns().length);
            out.printf("    maps %s, function tags %s, gpl %s, verified insns %d%n",
                    Arrays.toString(m.mapIds()), Arrays.stream(m.progTags()).mapToObj(HexFormat.of()::toHexDigits).toList(),
                    m.gplCompatible(), m.verifiedInsns());
            if (m.expectedAttachType() != 0 || !m.attachTarget().isEmpty() || m.targetProgId() != 0) {
                out.printf("    attach type %d, target %s (BTF %d:%d), target prog %d%n", m.expectedAttachType(),
                        m.attachTarget().isEmpty() ? "-" : m.attachTarget(), m.attachBtfObjId(), m.attachBtfId(),
                        m.targetProgId());
            }
            for (ptfence.region.PerfAttachment pa : ptfence.region.PerfAttachment.load(s, r.bootId(), m.progId())) {
                out.printf("    runs on: %s%n", pa.describe());
            }
            if (m.btfKey() != null) out.printf("    BTF key %s%n", m.btfKey().hex());
            for (BpfMetadata.SourceFile f : m.sources()) out.printf("    source %s, %d B%n", f.name(), f.content().length);
        } else if (r.metadata() instanceof FileMetadata f) {
            out.printf("  file %s at offset %d, build id %s%n", f.path(), f.fileOffset(),
                    HexFormat.of().formatHex(f.buildId()));
        }
        dump(s.requireImage(r.key()), r.address(), out);
    }

    private void dump(byte[] image, long address, PrintWriter out) {
        if (bytes) {
            hexdump(image, address, out);
        }
        if (disasm) {
            Disassembler d = Disassembler.find();
            String listing = d.list(image, address).orElseThrow(() -> new BadInputException(
                    "--disasm: no disassembler available (put one on the class path, or install GNU objdump); "
                            + "'ptarchive show --bytes' still works"));
            out.println("  disassembly (" + d.name() + "):");
            out.print(listing);
        }
    }

    static void hexdump(byte[] b, long address, PrintWriter out) {
        for (int i = 0; i < b.length; i += 16) {
            StringBuilder hex = new StringBuilder();
            StringBuilder text = new StringBuilder();
            for (int j = i; j < i + 16; j++) {
                if (j < b.length) {
                    hex.append(String.format("%02x ", b[j] & 0xff));
                    text.append(b[j] >= 0x20 && b[j] < 0x7f ? (char) b[j] : '.');
                } else {
                    hex.append("   ");
                }
                if (j == i + 7) {
                    hex.append(' ');
                }
            }
            out.printf("%016x  %s |%s|%n", address + i, hex, text);
        }
    }

    /** A full key, or the one image whose key starts with a prefix of at least 8 hex digits. */
    static ContentKey resolveKey(Snapshot s, String what, Archive a) {
        String p = what.toLowerCase(Locale.ROOT);
        if (!ContentKey.isHex(p) || p.length() < 8 || p.length() > 64) {
            throw new BadInputException("archive " + a.directory() + ": no region named '" + what
                    + "' (and it is not a content key or a key prefix of 8+ hex digits)");
        }
        List<ContentKey> found = new ArrayList<>();
        byte[] bytePrefix = HexFormat.of().parseHex(p.substring(0, p.length() & ~1));
        s.forEachPrefix(Table.IMAGE_INFO, bytePrefix, (k, v) -> {
            ContentKey key = ContentKey.fromBytes(k);
            if (key.hex().startsWith(p)) {
                found.add(key);
            }
            return found.size() < 2;
        });
        if (found.size() != 1) {
            throw new BadInputException("archive " + a.directory() + ": " + (found.isEmpty() ? "no image" : "several images")
                    + " with key prefix " + p);
        }
        return found.get(0);
    }
}
