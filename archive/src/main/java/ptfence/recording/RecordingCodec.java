package ptfence.recording;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import ptfence.cli.BadInputException;
import ptfence.store.RecordChecksum;

/** The one writer and parser of stored recording and lease records (docs/archive.md). */
public final class RecordingCodec {
    /** Version byte leading each lease record. */
    public static final int VERSION = 1;
    /**
     * Version byte leading each recording record: 2 is version 1 followed by a CRC-32C ({@link RecordChecksum}: the
     * perf.data path gc decides by is covered); version 1 records are still read, unchecked.
     */
    public static final int RECORDING_VERSION = 2;

    private RecordingCodec() {}

    /** Encodes a recording. */
    public static byte[] encode(Recording r) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(RECORDING_VERSION);
            out.writeUTF(r.id());
            out.writeUTF(r.perfDataPath());
            out.writeUTF(r.bootId());
            out.writeLong(r.startTime());
            out.writeLong(r.endTime());
            out.writeLong(r.createdMillis());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return RecordChecksum.append(bytes.toByteArray());
    }

    /** True if the recording record carries a checksum (version 2 on). */
    public static boolean checked(byte[] v) {
        return v.length > 0 && (v[0] & 0xff) >= 2;
    }

    /** Decodes a recording; {@code where} names the source in errors. */
    public static Recording decode(byte[] v, String where) {
        if (checked(v)) {
            byte[] fields = RecordChecksum.strip(v);
            if (fields == null) {
                throw new ptfence.region.DamagedRecordException(where + ": damaged record: its checksum does not "
                        + "match its bytes (its id, perf.data path or times altered); not used");
            }
            v = fields;
        }
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(v))) {
            int version = in.readUnsignedByte();
            if (version != 1 && version != RECORDING_VERSION) {
                throw new BadInputException(where + ": recording record version " + version + " is unknown (this "
                        + "build reads " + RECORDING_VERSION + ")");
            }
            Recording r = new Recording(in.readUTF(), in.readUTF(), in.readUTF(), in.readLong(), in.readLong(),
                    in.readLong());
            if (in.available() != 0) {
                throw new BadInputException(where + ": stray bytes after a recording record");
            }
            return r;
        } catch (IOException | IllegalArgumentException e) {
            throw new BadInputException(where + ": malformed recording record (" + e.getMessage() + ")");
        }
    }

    static byte[] encode(Lease l) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeUTF(l.id());
            out.writeUTF(l.holder());
            out.writeLong(l.fromGeneration());
            out.writeLong(l.startedMillis());
            out.writeLong(l.expiresMillis());
            // appended, so a build that knows only the five fields above still reads the record
            out.writeUTF(l.recording());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static Lease decodeLease(byte[] v, String where) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(v))) {
            checkVersion(in.readUnsignedByte(), where);
            Lease l = new Lease(in.readUTF(), in.readUTF(), in.readLong(), in.readLong(), in.readLong(), "");
            if (in.available() > 0) {
                l = new Lease(l.id(), l.holder(), l.fromGeneration(), l.startedMillis(), l.expiresMillis(),
                        in.readUTF());
            }
            if (in.available() != 0) {
                throw new BadInputException(where + ": stray bytes after a lease record");
            }
            return l;
        } catch (IOException | IllegalArgumentException e) {
            throw new BadInputException(where + ": malformed lease record (" + e.getMessage() + ")");
        }
    }

    private static void checkVersion(int version, String where) {
        if (version != VERSION) {
            throw new BadInputException(where + ": record version " + version + " is unknown (this build reads "
                    + VERSION + ")");
        }
    }
}
