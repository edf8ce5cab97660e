package ptfence.recording;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import ptfence.cli.BadInputException;

/** The one writer and parser of stored recording and lease records (docs/archive.md). */
public final class RecordingCodec {
    /** Version byte leading each record. */
    public static final int VERSION = 1;

    private RecordingCodec() {}

    /** Encodes a recording. */
    public static byte[] encode(Recording r) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeUTF(r.id());
            out.writeUTF(r.perfDataPath());
            out.writeUTF(r.bootId());
            out.writeLong(r.startTime());
            out.writeLong(r.endTime());
            out.writeLong(r.createdMillis());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** Decodes a recording; {@code where} names the source in errors. */
    public static Recording decode(byte[] v, String where) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(v))) {
            checkVersion(in.readUnsignedByte(), where);
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
