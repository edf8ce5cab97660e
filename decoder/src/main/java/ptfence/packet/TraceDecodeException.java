package ptfence.packet;

import ptfence.cli.BadInputException;

/**
 * A packet at {@link #offset()} could not be decoded. The only exception the packet layer throws for
 * bad trace bytes; callers resynchronize at the next PSB. Carries no stack trace: corrupt traces can
 * raise many of these and the trace offset is the whole story.
 */
public final class TraceDecodeException extends BadInputException {
    private static final long serialVersionUID = 1L;

    private final long offset;
    private final DecodeError error;

    public TraceDecodeException(DecodeError error, long offset) {
        super("trace offset 0x" + Long.toHexString(offset) + ": " + error.text());
        this.offset = offset;
        this.error = error;
    }

    /** Offset of the packet that failed, relative to the start of its {@link TraceSource}. */
    public long offset() {
        return offset;
    }

    public DecodeError error() {
        return error;
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }
}
