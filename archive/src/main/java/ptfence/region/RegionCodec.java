package ptfence.region;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import ptfence.cli.BadInputException;
import ptfence.store.ContentKey;
import ptfence.store.RecordChecksum;

/**
 * The one writer and one parser of the stored region record (docs/archive.md, "region record"). Used by
 * the archive's REGIONS table and by bundles.
 */
public final class RegionCodec {
    /**
     * Version byte leading each record: 3 is version 2 followed by a CRC-32C of every byte before it, so damaged
     * metadata (source text, line info, xlated instructions: bytes no content key covers) is found by verify and
     * refused by every reader; 2 stores a program's BTF by content key and keeps map ids, function tags and the
     * attachment; versions 1 (BTF inline) and 2 are still read, unchecked.
     */
    public static final int VERSION = 3;
    private static final int META_NONE = 0;
    private static final int META_BPF = 1;
    private static final int META_FILE = 2;
    private static final int META_KERNEL = 3;

    private RegionCodec() {}

    /** Encodes a region. */
    public static byte[] encode(Region r) {
        return encode(r, false);
    }

    /**
     * A record that travels alone (a published object): the content its metadata refers to — a program's BTF, a
     * kernel's kallsyms — inline where the region holds it (flag 2), not by key only.
     */
    public static byte[] encodeSelfContained(Region r) {
        return encode(r, true);
    }

    private static byte[] encode(Region r, boolean inline) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(128);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeUTF(r.bootId());
            out.writeLong(r.address());
            out.writeLong(r.length());
            out.writeLong(r.validFrom());
            out.writeLong(r.validTo());
            out.writeUTF(r.kind().name());
            out.writeUTF(r.name());
            out.write(r.key().toBytes());
            RegionMetadata meta = r.metadata();
            if (meta instanceof BpfMetadata m) {
                out.writeByte(META_BPF);
                writeBpf(out, m, inline);
            } else if (meta instanceof FileMetadata f) {
                out.writeByte(META_FILE);
                out.writeUTF(f.path());
                out.writeLong(f.fileOffset());
                writeBytes(out, f.buildId());
            } else if (meta instanceof KernelMetadata k) {
                out.writeByte(META_KERNEL);
                out.writeUTF(k.release());
                writeContent(out, k.kallsymsKey(), inline ? k.kallsyms() : new byte[0]);
            } else {
                out.writeByte(META_NONE);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return RecordChecksum.append(bytes.toByteArray());
    }

    /** True if the record carries a checksum (version 3 on); older records are read unchecked. */
    public static boolean checked(byte[] v) {
        return v.length > 0 && (v[0] & 0xff) >= 3;
    }

    /** Decodes a region; {@code where} names the source in the error of a malformed or damaged record. */
    public static Region decode(byte[] v, String where) {
        if (checked(v)) {
            byte[] fields = RecordChecksum.strip(v);
            if (fields == null) {
                String name;
                try {
                    name = " (" + decodeFields(java.util.Arrays.copyOf(v, Math.max(v.length - RecordChecksum.LENGTH,
                            0)), where).name() + ")";
                } catch (RuntimeException e) {
                    name = ""; // too damaged to name
                }
                throw new DamagedRecordException(where + name + ": damaged record: its checksum does not match its "
                        + "bytes (metadata such as source text or line info altered); not used");
            }
            return decodeFields(fields, where);
        }
        return decodeFields(v, where);
    }

    private static Region decodeFields(byte[] v, String where) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(v))) {
            int version = in.readUnsignedByte();
            if (version != VERSION && version != 2 && version != 1) {
                throw new BadInputException(where + ": region record version " + version + " is unknown (this build reads "
                        + VERSION + ")");
            }
            String boot = in.readUTF();
            long address = in.readLong();
            long length = in.readLong();
            long from = in.readLong();
            long to = in.readLong();
            String kindName = in.readUTF();
            RegionKind kind;
            try {
                kind = RegionKind.valueOf(kindName);
            } catch (IllegalArgumentException e) {
                throw new BadInputException(where + ": unknown region kind '" + kindName + "'");
            }
            String name = in.readUTF();
            byte[] key = new byte[ContentKey.LENGTH];
            in.readFully(key);
            RegionMetadata meta = switch (in.readUnsignedByte()) {
                case META_NONE -> RegionMetadata.None.INSTANCE;
                case META_BPF -> version == 1 ? readBpfV1(in) : readBpf(in);
                case META_FILE -> new FileMetadata(in.readUTF(), in.readLong(), readBytes(in));
                case META_KERNEL -> {
                    String release = in.readUTF();
                    Content c = readContent(in);
                    yield new KernelMetadata(release, c.bytes(), c.key());
                }
                default -> throw new BadInputException(where + ": unknown region metadata type");
            };
            if (in.available() != 0) {
                throw new BadInputException(where + ": " + in.available() + " stray bytes after a region record");
            }
            return new Region(boot, address, length, from, to, kind, name, ContentKey.fromBytes(key), meta);
        } catch (IOException | IllegalArgumentException e) {
            throw new BadInputException(where + ": malformed region record (" + (e instanceof java.io.EOFException
                    ? "it ends before its last field" : e instanceof java.io.UTFDataFormatException
                    ? "a name that is not valid UTF-8" : e.getMessage() != null ? e.getMessage() : "unreadable") + ")");
        }
    }

    private static void writeBpf(DataOutputStream out, BpfMetadata m, boolean inline) throws IOException {
        writeBpfInfo(out, m);
        out.writeInt(m.btfId());
        writeContent(out, m.btfKey(), inline ? m.btf() : new byte[0]);
        writeBytes(out, m.xlatedInsns());
        out.writeLong(m.loadTime());
        out.writeInt(m.uid());
        int[] maps = m.mapIds();
        out.writeInt(maps.length);
        for (int id : maps) out.writeInt(id);
        long[] tags = m.progTags();
        out.writeInt(tags.length);
        for (long t : tags) out.writeLong(t);
        out.writeInt(m.expectedAttachType());
        out.writeInt(m.attachBtfObjId());
        out.writeInt(m.attachBtfId());
        out.writeUTF(m.attachTarget());
        out.writeInt(m.targetProgId());
        out.writeByte(m.gplCompatible() ? 1 : 0);
        out.writeInt(m.verifiedInsns());
        out.writeInt(m.sources().size());
        for (BpfMetadata.SourceFile f : m.sources()) {
            out.writeUTF(f.name());
            writeBytes(out, f.content());
        }
    }

    /** The part versions 1 and 2 share: id, tag, name, type, functions, line and func info. */
    private static void writeBpfInfo(DataOutputStream out, BpfMetadata m) throws IOException {
        out.writeInt(m.progId());
        out.writeUTF(m.tag());
        out.writeUTF(m.name());
        out.writeInt(m.type());
        long[] ksyms = m.jitedKsyms();
        out.writeInt(ksyms.length);
        for (long k : ksyms) {
            out.writeLong(k);
        }
        int[] lens = m.jitedFuncLens();
        out.writeInt(lens.length);
        for (int l : lens) {
            out.writeInt(l);
        }
        writeBytes(out, m.lineInfo());
        out.writeInt(m.lineInfoRecSize());
        writeBytes(out, m.jitedLineInfo());
        out.writeInt(m.jitedLineInfoRecSize());
        writeBytes(out, m.funcInfo());
        out.writeInt(m.funcInfoRecSize());
    }

    /** id, tag, name, type, functions, line and func info: read in the order {@link #writeBpfInfo} wrote them. */
    private record Info(int progId, String tag, String name, int type, long[] ksyms, int[] lens, byte[] lineInfo,
            int lineRec, byte[] jitedLine, int jitedLineRec, byte[] funcInfo, int funcRec) {
        static Info read(DataInputStream in) throws IOException {
            int progId = in.readInt();
            String tag = in.readUTF();
            String name = in.readUTF();
            int type = in.readInt();
            long[] ksyms = new long[checkedCount(in.readInt(), in.available() / 8)];
            for (int i = 0; i < ksyms.length; i++) {
                ksyms[i] = in.readLong();
            }
            int[] lens = new int[checkedCount(in.readInt(), in.available() / 4)];
            for (int i = 0; i < lens.length; i++) {
                lens[i] = in.readInt();
            }
            byte[] lineInfo = readBytes(in);
            int lineRec = in.readInt();
            byte[] jitedLine = readBytes(in);
            int jitedLineRec = in.readInt();
            byte[] funcInfo = readBytes(in);
            int funcRec = in.readInt();
            return new Info(progId, tag, name, type, ksyms, lens, lineInfo, lineRec, jitedLine, jitedLineRec,
                    funcInfo, funcRec);
        }
    }

    private static BpfMetadata readBpf(DataInputStream in) throws IOException {
        Info i = Info.read(in);
        int btfId = in.readInt();
        Content btf = readContent(in);
        byte[] xlated = readBytes(in);
        long loadTime = in.readLong();
        int uid = in.readInt();
        int[] maps = new int[checkedCount(in.readInt(), in.available() / 4)];
        for (int k = 0; k < maps.length; k++) maps[k] = in.readInt();
        long[] tags = new long[checkedCount(in.readInt(), in.available() / 8)];
        for (int k = 0; k < tags.length; k++) tags[k] = in.readLong();
        int expected = in.readInt();
        int attachObj = in.readInt();
        int attachId = in.readInt();
        String target = in.readUTF();
        int targetProg = in.readInt();
        boolean gpl = in.readUnsignedByte() != 0;
        int verified = in.readInt();
        int nSources = checkedCount(in.readInt(), in.available() / 6);
        java.util.List<BpfMetadata.SourceFile> sources = new java.util.ArrayList<>(nSources);
        for (int k = 0; k < nSources; k++) sources.add(new BpfMetadata.SourceFile(in.readUTF(), readBytes(in)));
        return new BpfMetadata(i.progId, i.tag, i.name, i.type, i.ksyms, i.lens, i.lineInfo, i.lineRec, i.jitedLine,
                i.jitedLineRec, i.funcInfo, i.funcRec, btfId, btf.bytes(), xlated, loadTime, uid, maps, tags, expected,
                attachObj, attachId, target, targetProg, gpl, verified, btf.key(), sources);
    }

    /** A version 1 record: the BTF inline, nothing after the uid. */
    private static BpfMetadata readBpfV1(DataInputStream in) throws IOException {
        Info i = Info.read(in);
        int btfId = in.readInt();
        byte[] btf = readBytes(in);
        byte[] xlated = readBytes(in);
        long loadTime = in.readLong();
        int uid = in.readInt();
        return new BpfMetadata(i.progId, i.tag, i.name, i.type, i.ksyms, i.lens, i.lineInfo, i.lineRec, i.jitedLine,
                i.jitedLineRec, i.funcInfo, i.funcRec, btfId, btf, xlated, loadTime, uid);
    }

    /** Content a record refers to: by key (the archive holds it), or inline; both null/empty when none. */
    private record Content(ContentKey key, byte[] bytes) {}

    /** A u8 flag: 0 none, 1 a content key follows, 2 the bytes follow (u32 length, bytes). */
    private static void writeContent(DataOutputStream out, ContentKey key, byte[] bytes) throws IOException {
        if (bytes.length > 0) {
            out.writeByte(2);
            writeBytes(out, bytes);
        } else if (key != null) {
            out.writeByte(1);
            out.write(key.toBytes());
        } else {
            out.writeByte(0);
        }
    }

    private static Content readContent(DataInputStream in) throws IOException {
        int flag = in.readUnsignedByte();
        if (flag == 0) {
            return new Content(null, null);
        }
        if (flag == 2) {
            return new Content(null, readBytes(in));
        }
        if (flag != 1) {
            throw new IOException("content flag " + flag + " is unknown");
        }
        byte[] k = new byte[ContentKey.LENGTH];
        in.readFully(k);
        return new Content(ContentKey.fromBytes(k), null);
    }

    private static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    private static byte[] readBytes(DataInputStream in) throws IOException {
        byte[] b = new byte[checkedCount(in.readInt(), in.available())];
        in.readFully(b);
        return b;
    }

    private static int checkedCount(int n, int max) throws IOException {
        if (n < 0 || n > max) {
            throw new IOException("count " + n + " exceeds the record");
        }
        return n;
    }
}
