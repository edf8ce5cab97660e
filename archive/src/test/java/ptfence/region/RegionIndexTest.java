package ptfence.region;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import ptfence.store.Archive;
import ptfence.store.ContentKey;

class RegionIndexTest {
    static final String BOOT = "5f1c0b7e-2d3a-4c44-9a61-0e3f1a2b3c4d";
    static final long PROG_ADDR = 0xffffffffc0a01000L;

    @TempDir
    Path tmp;

    static byte[] code(int seed, int len) {
        byte[] b = new byte[len];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void oneAddressHeldThreeDifferentImagesOverTime() {
        byte[] v1 = code(1, 300);
        byte[] v2 = code(2, 500);
        byte[] v3 = code(3, 200);
        try (Archive a = Archive.open(tmp.resolve("a"))) {
            // loaded at t=100, unloaded at 200; a new program at 200..350; a third from 400, still loaded.
            a.write(b -> RegionIndex.add(b, new Region(BOOT, PROG_ADDR, v1.length, 100, Region.OPEN,
                    RegionKind.BPF_PROG, "bpf_prog_aaaa_one", b.put(v1), BpfMetadata.of(11, "aaaa000000000001", "one", 2))));
            assertEquals(1, (int) a.write(b -> RegionIndex.closeOpenAt(b, BOOT, PROG_ADDR, 200)));
            a.write(b -> RegionIndex.add(b, new Region(BOOT, PROG_ADDR, v2.length, 200, 350,
                    RegionKind.BPF_PROG, "bpf_prog_bbbb_two", b.put(v2), BpfMetadata.of(12, "bbbb000000000002", "two", 2))));
            a.write(b -> RegionIndex.add(b, new Region(BOOT, PROG_ADDR, v3.length, 400, Region.OPEN,
                    RegionKind.BPF_PROG, "bpf_prog_aaab_three", b.put(v3), BpfMetadata.of(13, "aaab000000000003", "three", 2))));

            long ip = PROG_ADDR + 150;
            assertTrue(a.read(s -> RegionIndex.bytesAt(s, BOOT, ip, 99)).isEmpty(), "before first load");
            assertImage(a, ip, 100, v1);
            assertImage(a, ip, 199, v1);
            assertImage(a, ip, 200, v2);
            assertImage(a, ip, 349, v2);
            assertTrue(a.read(s -> RegionIndex.bytesAt(s, BOOT, ip, 360)).isEmpty(), "gap between programs");
            assertTrue(a.read(s -> RegionIndex.bytesAt(s, BOOT, PROG_ADDR + 250, 450)).isEmpty(),
                    "third image is only 200 bytes long");
            assertImage(a, ip, 1_000_000, v3);
            assertTrue(a.read(s -> RegionIndex.bytesAt(s, "other-boot", ip, 150)).isEmpty(), "other boot");
            assertEquals(3, a.read(s -> RegionIndex.containing(s, BOOT, ip)).size());

            List<Region> named = a.read(s -> RegionIndex.byName(s, "bpf_prog_bbbb_two"));
            assertEquals(1, named.size());
            assertEquals(350, named.get(0).validTo());
            List<Region> tagged = a.read(s -> RegionIndex.byTagPrefix(s, "aaa"));
            assertEquals(List.of("one", "three"), tagged.stream().map(r -> ((BpfMetadata) r.metadata()).name()).toList());
            assertEquals(1, a.read(s -> RegionIndex.byTagPrefix(s, "aaab")).size());
            assertEquals(0, a.read(s -> RegionIndex.byTagPrefix(s, "c")).size());
            assertEquals(3, a.read(s -> RegionIndex.byTagPrefix(s, "")).size());
        }
    }

    private static void assertImage(Archive a, long ip, long time, byte[] expected) {
        ImageAt at = a.read(s -> RegionIndex.bytesAt(s, BOOT, ip, time)).orElseThrow(
                () -> new AssertionError("no image at t=" + time));
        assertArrayEquals(expected, at.bytes(), "image at t=" + time);
        assertEquals(expected[at.offsetOf(ip)], at.bytes()[(int) (ip - PROG_ADDR)]);
    }

    @Test
    void addIsIdempotentAndClosesAnOpenCopy() {
        byte[] v = code(4, 64);
        try (Archive a = Archive.open(tmp.resolve("b"))) {
            Region open = a.write(b -> new Region(BOOT, 0x1000, v.length, 5, Region.OPEN, RegionKind.TEXT_POKE,
                    "poke", b.put(v), null));
            long id1 = a.write(b -> RegionIndex.add(b, open));
            long id2 = a.write(b -> RegionIndex.add(b, open.closedAt(9)));
            assertEquals(id1, id2);
            assertEquals(9, a.read(s -> RegionIndex.get(s, id1)).orElseThrow().validTo());
            assertEquals(1, a.read(s -> RegionIndex.all(s, r -> true)).size());
            boolean closedAgain = a.write(b -> RegionIndex.close(b, id1, 20));
            assertFalse(closedAgain, "already closed");
            Region noImage = new Region(BOOT, 0x2000, 4, 0, 1, RegionKind.KPROBE_INSN, "kp",
                    ContentKey.of(new byte[] {1, 2, 3, 4}), null);
            assertThrows(IllegalArgumentException.class, () -> a.write(b -> RegionIndex.add(b, noImage)));
            Region wrongLength = new Region(BOOT, 0x3000, v.length + 1, 0, 1, RegionKind.KPROBE_INSN, "kp", open.key(), null);
            assertThrows(IllegalArgumentException.class, () -> a.write(b -> RegionIndex.add(b, wrongLength)));
        }
    }

    @Test
    void codecRoundTripsEveryMetadataShape() {
        ContentKey k = ContentKey.of(new byte[] {1});
        BpfMetadata full = full();
        for (RegionMetadata m : List.of(full, new FileMetadata("/lib/x.so", 4096, new byte[] {1, 2}),
                RegionMetadata.None.INSTANCE)) {
            Region r = new Region(BOOT, -4096, 10, 1, Region.OPEN, RegionKind.USER_FILE, "n", k, m);
            Region back = RegionCodec.decode(RegionCodec.encode(r), "test");
            // the record keeps the BTF's key; the bytes live in the content store
            assertEquals(m instanceof BpfMetadata b ? withMetadata(r, b.withoutBtfBytes()) : r, back);
            assertEquals(r.id(), back.id());
        }
        // a version 1 record (BTF inline, nothing after the uid) still reads
        Region v1 = new Region(BOOT, -4096, 10, 1, Region.OPEN, RegionKind.BPF_PROG, "n", k,
                new BpfMetadata(full.progId(), full.tag(), full.name(), full.type(), full.jitedKsyms(),
                        full.jitedFuncLens(), full.lineInfo(), 16, full.jitedLineInfo(), 8, full.funcInfo(), 8,
                        full.btfId(), full.btf(), full.xlatedInsns(), full.loadTime(), full.uid()));
        assertEquals(v1, RegionCodec.decode(versionOne(v1), "test"));
        byte[] enc = RegionCodec.encode(new Region(BOOT, 1, 1, 1, 2, RegionKind.MODULE, "m", k, null));
        enc[0] = 9;
        assertThrows(ptfence.cli.BadInputException.class, () -> RegionCodec.decode(enc, "test"));
        byte[] cut = java.util.Arrays.copyOf(RegionCodec.encode(new Region(BOOT, 1, 1, 1, 2, RegionKind.MODULE, "m", k,
                full)), 100);
        assertThrows(ptfence.cli.BadInputException.class, () -> RegionCodec.decode(cut, "test"));
    }

    private static BpfMetadata full() {
        return new BpfMetadata(77, "0123456789abcdef", "xdp_prog", 6, new long[] {0xffffffffc0001000L,
                0xffffffffc0001400L}, new int[] {0x3f0, 0x80}, code(5, 48), 16, code(6, 48), 8, code(7, 16), 8, 99,
                code(8, 1000), code(9, 256), 123456789L, 1000, new int[] {4, 9}, new long[] {0x1122334455667788L,
                0x99aabbccddeeff00L}, 37, 1, 4242, "tcp_v4_connect", 12, true, 55,  null,
                List.of(new BpfMetadata.SourceFile("prog.c", "int x;\n".getBytes())));
    }

    private static Region withMetadata(Region r, RegionMetadata m) {
        return new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(), r.kind(), r.name(),
                r.key(), m);
    }

    /** The version 1 encoding of a region with BPF metadata, as builds before version 2 wrote it. */
    private static byte[] versionOne(Region r) {
        BpfMetadata m = (BpfMetadata) r.metadata();
        var bytes = new java.io.ByteArrayOutputStream();
        try (var out = new java.io.DataOutputStream(bytes)) {
            out.writeByte(1);
            out.writeUTF(r.bootId());
            out.writeLong(r.address());
            out.writeLong(r.length());
            out.writeLong(r.validFrom());
            out.writeLong(r.validTo());
            out.writeUTF(r.kind().name());
            out.writeUTF(r.name());
            out.write(r.key().toBytes());
            out.writeByte(1);
            out.writeInt(m.progId());
            out.writeUTF(m.tag());
            out.writeUTF(m.name());
            out.writeInt(m.type());
            out.writeInt(m.jitedKsyms().length);
            for (long a : m.jitedKsyms()) out.writeLong(a);
            out.writeInt(m.jitedFuncLens().length);
            for (int l : m.jitedFuncLens()) out.writeInt(l);
            byte[][] arrays = {m.lineInfo(), m.jitedLineInfo(), m.funcInfo()};
            for (int i = 0; i < arrays.length; i++) {
                out.writeInt(arrays[i].length);
                out.write(arrays[i]);
                out.writeInt(i == 0 ? 16 : 8);
            }
            out.writeInt(m.btfId());
            out.writeInt(m.btf().length);
            out.write(m.btf());
            out.writeInt(m.xlatedInsns().length);
            out.write(m.xlatedInsns());
            out.writeLong(m.loadTime());
            out.writeInt(m.uid());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * A program's BTF is stored once by content: regions of two programs sharing it hold its key, the archive holds
     * the bytes once, {@link RegionIndex#withContent} puts them back; an unknown key is refused; verify names a missing
     * one.
     */
    @Test
    void btfIsStoredOnceByContentAndPutBack() {
        BpfMetadata m = full();
        try (Archive a = Archive.open(tmp.resolve("btf"))) {
            long[] ids = a.write(b -> new long[] {
                    RegionIndex.add(b, new Region(BOOT, 0x1000, 3, 0, Region.OPEN, RegionKind.BPF_PROG, "p1",
                            b.put(new byte[] {1, 2, 3}), m)),
                    RegionIndex.add(b, new Region(BOOT, 0x2000, 3, 0, Region.OPEN, RegionKind.BPF_PROG, "p2",
                            b.put(new byte[] {4, 5, 6}), m))});
            a.read(s -> {
                for (long id : ids) {
                    Region stored = RegionIndex.get(s, id).orElseThrow();
                    BpfMetadata sm = (BpfMetadata) stored.metadata();
                    assertTrue(sm.btfElsewhere() && sm.btf().length == 0, sm.toString());
                    assertEquals(List.of(stored.key(), ContentKey.of(m.btf())), stored.contentKeys());
                    assertEquals(m, RegionIndex.withContent(s, stored).metadata());
                }
                assertEquals(3, RegionIndex.all(s, r -> true).stream().flatMap(r -> r.contentKeys().stream())
                        .distinct().count(), "two images and one BTF");
                return null;
            });
            BpfMetadata unknownBtf = new BpfMetadata(1, "", "p3", 1, null, null, null, 0, null, 0, null, 0, 3,
                    code(3, 50), null, 0, 0).withoutBtfBytes();
            assertThrows(IllegalArgumentException.class, () -> a.write(b -> RegionIndex.add(b, new Region(BOOT,
                    0x3000, 3, 0, 1, RegionKind.BPF_PROG, "p3", b.put(new byte[] {7, 8, 9}), unknownBtf))));
        }
    }

    /** Property: for random non-overlapping-in-time histories, bytesAt agrees with a brute-force scan. */
    @Test
    void lookupsAgreeWithBruteForceOverRandomHistories() {
        Random rnd = new Random(42);
        try (Archive a = Archive.open(tmp.resolve("p"))) {
            List<Region> all = new ArrayList<>();
            for (int slot = 0; slot < 40; slot++) {
                long base = 0xffffffffc0000000L + slot * 0x3000L + rnd.nextInt(0x100);
                long t = rnd.nextInt(100);
                int versions = 1 + rnd.nextInt(4);
                for (int v = 0; v < versions; v++) {
                    long from = t + rnd.nextInt(50);
                    long to = v == versions - 1 && rnd.nextBoolean() ? Region.OPEN : from + 1 + rnd.nextInt(100);
                    byte[] img = code(slot * 10 + v, 16 + rnd.nextInt(0x2000));
                    long address = base + rnd.nextInt(0x400);
                    String boot = rnd.nextInt(5) == 0 ? "boot-b" : "boot-a";
                    Region r = a.write(b -> {
                        Region reg = new Region(boot, address, img.length, from, to, RegionKind.BPF_PROG,
                                "p" + address, b.put(img), null);
                        RegionIndex.add(b, reg);
                        return reg;
                    });
                    all.add(r);
                    if (to == Region.OPEN) {
                        break;
                    }
                    t = to;
                }
            }
            for (int q = 0; q < 3000; q++) {
                Region pick = all.get(rnd.nextInt(all.size()));
                String boot = rnd.nextInt(8) == 0 ? "boot-b" : pick.bootId();
                long addr = pick.address() - 0x100 + rnd.nextInt((int) pick.length() + 0x200);
                long time = rnd.nextInt(800);
                Optional<Region> expected = all.stream().filter(r -> r.bootId().equals(boot) && r.contains(addr)
                        && r.validAt(time)).max(Comparator.comparingLong(Region::validFrom));
                Optional<ImageAt> got = a.read(s -> RegionIndex.bytesAt(s, boot, addr, time));
                assertEquals(expected, got.map(ImageAt::region), "boot " + boot + " addr " + Long.toHexString(addr)
                        + " t " + time);
                got.ifPresent(g -> assertEquals(g.region().key(), ContentKey.of(g.bytes())));
            }
        }
    }

    /** What is learnt of a program after its region was stored (bcc's source) rewrites the record, validity kept. */
    @Test
    void enrichingAStoredRegionKeepsItsValidityAndAddsTheMetadata() {
        byte[] v = code(7, 64);
        BpfMetadata bare = BpfMetadata.of(21, "cccc000000000021", "late", 2);
        BpfMetadata withSource = bare.withSources(List.of(new BpfMetadata.SourceFile("late.c", "int x;".getBytes())));
        try (Archive a = Archive.open(tmp.resolve("e"))) {
            Region r = a.write(b -> {
                Region x = new Region(BOOT, PROG_ADDR, v.length, 100, Region.OPEN, RegionKind.BPF_PROG,
                        "bpf_prog_cccc_late", b.put(v), bare);
                RegionIndex.add(b, x);
                return x;
            });
            assertEquals(1, (int) a.write(b -> RegionIndex.closeOpenAt(b, BOOT, PROG_ADDR, 200)));
            Region richer = new Region(r.bootId(), r.address(), r.length(), r.validFrom(), r.validTo(), r.kind(),
                    r.name(), r.key(), withSource);
            assertTrue((boolean) a.write(b -> RegionIndex.enrich(b, richer)));
            Region stored = a.read(s -> RegionIndex.get(s, r.id())).orElseThrow();
            assertEquals(withSource, stored.metadata());
            assertEquals(200, stored.validTo(), "still closed");
            Region unknown = new Region(BOOT, PROG_ADDR + 4096, v.length, 100, Region.OPEN, RegionKind.BPF_PROG,
                    "bpf_prog_cccc_late", r.key(), withSource);
            assertFalse((boolean) a.write(b -> RegionIndex.enrich(b, unknown)));
        }
    }
}
