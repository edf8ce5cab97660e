package ptfence.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.BitSet;
import ptfence.cli.BadInputException;

/**
 * LMDB's data file read with plain reads, never mapped, so that a damaged file cannot crash the JVM. LMDB itself
 * trusts its file: a {@code data.mdb} cut short makes it touch pages past the end of its mapping (SIGBUS, the JVM
 * dies), a flipped page pointer or node offset makes it read outside a page. Before {@link Archive} hands the
 * file to LMDB it checks here what LMDB would walk: the two meta pages, then every branch and leaf page reachable
 * from the newest meta (page numbers, flags, bounds, node offsets and sizes, tree depth, named databases) and the
 * extent of every overflow run. {@link #check} with {@code deep} also reads each overflow run's header, checks key
 * order and the entry counts.
 *
 * <p>Layout (LMDB 0.9, 64-bit little-endian): a page is a 16-byte header (u64 page number, u16 pad, u16 flags,
 * u16 lower, u16 upper — or u32 page count for overflow) then, on meta pages, the meta: u32 magic 0xBEEFC0DE,
 * u32 version 1, u64 address, u64 map size, two 48-byte database records (free pages, main), u64 last page,
 * u64 txn id. A database record: u32 pad (page size in the free record of a meta), u16 flags, u16 depth, u64
 * branch, leaf and overflow page counts, u64 entries, u64 root. Nodes: u16 lo, u16 hi, u16 flags, u16 key size,
 * key, data (or the u64 first page of an overflow run when flagged big).
 */
public final class LmdbFile {
    static final int MAGIC = 0xBEEFC0DE;
    static final int DATA_VERSION = 1;
    static final int PAGE_HEADER = 16;
    static final int NODE_HEADER = 8;
    static final int DB_RECORD = 48;
    static final int P_BRANCH = 0x01;
    static final int P_LEAF = 0x02;
    static final int P_OVERFLOW = 0x04;
    static final int P_META = 0x08;
    static final int F_BIGDATA = 0x01;
    static final int F_SUBDATA = 0x02;
    static final long P_INVALID = -1L;
    /** LMDB's cursor stack depth: a deeper tree is not one LMDB wrote. */
    static final int MAX_DEPTH = 32;
    private static final int MDB_INTEGERKEY = 0x08;

    /** One meta page as read. */
    public record Meta(int index, int pageSize, long lastPage, long txnId, Db free, Db main) {
        /** Bytes the file must at least hold for every page up to the last one. */
        public long neededBytes() {
            return (lastPage + 1) * pageSize;
        }
    }

    /** A database record (the free list, the main database, or a named database). */
    public record Db(int flags, int depth, long branchPages, long leafPages, long overflowPages, long entries,
            long root) {}

    /** What a check found: the meta used, pages read, and the file's size. */
    public record Report(Meta meta, long fileSize, long treePages, long overflowPages, long entries) {}

    private final Path file;
    private final FileChannel ch;
    private long size;
    private final boolean deep;
    private final ByteBuffer page;
    private final ByteBuffer header = ByteBuffer.allocate(PAGE_HEADER).order(ByteOrder.LITTLE_ENDIAN);
    /** Named databases found in the main database's leaves, walked after it. */
    private final java.util.List<Object[]> named = new java.util.ArrayList<>();
    private Meta meta;
    private BitSet seen;
    private long treePages;
    private long overflowPages;
    private long entries;

    private LmdbFile(Path file, FileChannel ch, boolean deep) throws IOException {
        this.file = file;
        this.ch = ch;
        this.size = ch.size();
        this.deep = deep;
        this.page = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Checks the whole structure LMDB would walk. A writer may commit meanwhile and reuse pages of the snapshot
     * being walked; a problem therefore counts only if the newest meta did not change during the walk (else the
     * walk is repeated).
     */
    public static Report check(Path data, boolean deep) {
        try (FileChannel ch = FileChannel.open(data, StandardOpenOption.READ)) {
            for (int attempt = 0; ; attempt++) {
                LmdbFile f = new LmdbFile(data, ch, deep);
                Meta m = f.readMetas();
                try {
                    f.walkAll(m);
                    return new Report(m, f.size, f.treePages, f.overflowPages, f.entries);
                } catch (BadInputException e) {
                    LmdbFile again = new LmdbFile(data, ch, false);
                    Meta now = again.readMetas();
                    if (now.txnId() == m.txnId() || attempt >= 5) {
                        throw e;
                    }
                }
            }
        } catch (AccessDeniedException e) {
            throw new BadInputException(data + ": permission denied");
        } catch (IOException e) {
            throw new UncheckedIOException(data.toString(), e);
        }
    }

    private Meta readMetas() throws IOException {
        if (size == 0) {
            throw new BadInputException(file + ": empty (0 bytes), not an LMDB file; a ptfence archive is never "
                    + "empty (remove it to start a new archive there)");
        }
        if (size < PAGE_HEADER + 152) {
            throw new BadInputException(file + ": " + size + " bytes, too short for an LMDB meta page");
        }
        Meta m0 = readMeta(0, 0);
        if (size < 2L * m0.pageSize()) {
            throw new BadInputException(file + ": " + size + " bytes, shorter than its two meta pages (page size "
                    + m0.pageSize() + ")");
        }
        Meta m1 = readMeta(1, m0.pageSize());
        if (m1.pageSize() != m0.pageSize()) {
            throw new BadInputException(file + ": the meta pages disagree on the page size (" + m0.pageSize()
                    + " and " + m1.pageSize() + ")");
        }
        Meta newer = m1.txnId() > m0.txnId() ? m1 : m0;
        // LMDB writes a transaction's pages before its meta: a size read after the meta covers them
        size = ch.size();
        // A file shorter than (last page + 1) x page size is not damaged by itself: LMDB does not write a page
        // freed in the transaction that allocated it, and that may be the last. Only a page LMDB would read past
        // the end is damage, which the walk finds.
        return newer;
    }

    private Meta readMeta(int index, long offset) throws IOException {
        ByteBuffer b = read(offset, PAGE_HEADER + 152);
        String where = file + ": meta page " + index + " (offset " + offset + ")";
        int flags = b.getShort(10) & 0xffff;
        if ((flags & P_META) == 0) {
            throw new BadInputException(where + " is not a meta page (flags 0x" + Integer.toHexString(flags)
                    + "): not an LMDB file, or damaged");
        }
        int magic = b.getInt(16);
        if (magic != MAGIC) {
            throw new BadInputException(where + " has no LMDB magic (0x" + Integer.toHexString(magic)
                    + "): not an LMDB file, or damaged");
        }
        int version = b.getInt(20);
        if (version != DATA_VERSION) {
            throw new BadInputException(where + ": LMDB data version " + version + ", expected " + DATA_VERSION);
        }
        Db free = db(b, 16 + 24);
        Db main = db(b, 16 + 24 + DB_RECORD);
        int psize = b.getInt(16 + 24);
        if (psize < 512 || psize > (1 << 16) || Integer.bitCount(psize) != 1) {
            throw new BadInputException(where + ": page size " + psize + " is not one LMDB writes");
        }
        long last = b.getLong(16 + 24 + 2 * DB_RECORD);
        long txn = b.getLong(16 + 24 + 2 * DB_RECORD + 8);
        if (last < 1 || last > Long.MAX_VALUE / psize - 1) {
            throw new BadInputException(where + ": last page number " + last + " is impossible");
        }
        return new Meta(index, psize, last, txn, free, main);
    }

    private static Db db(ByteBuffer b, int at) {
        return new Db(b.getShort(at + 4) & 0xffff, b.getShort(at + 6) & 0xffff, b.getLong(at + 8),
                b.getLong(at + 16), b.getLong(at + 24), b.getLong(at + 32), b.getLong(at + 40));
    }

    private void walkAll(Meta m) throws IOException {
        this.meta = m;
        // only pages inside the file are ever marked (the rest are refused first): a damaged last-page number
        // must not size this set
        this.seen = new BitSet((int) Math.min(Math.min(m.lastPage() + 1, size / m.pageSize() + 1), Integer.MAX_VALUE));
        seen.set(0, 2);
        walkDb(FREE_DB, m.free(), MDB_INTEGERKEY, false);
        walkDb("main database", m.main(), 0, true);
        for (Object[] n : named) {
            walkDb((String) n[0], (Db) n[1], 0, false);
        }
        if (deep) {
            checkFreeLists();
        }
    }

    private static final String FREE_DB = "free-page database";

    /** Where the free-page database's values are: {page, node, offset, length}, read once every tree is walked. */
    private final java.util.List<long[]> freeLists = new java.util.ArrayList<>();

    /**
     * The pages a writer will reuse are the ones the free-page database lists: each list (u64 count, then that many
     * u64 page numbers) must name pages inside the file that no tree reaches, each once; a flipped bit there would
     * make the next commit overwrite a live page.
     */
    private void checkFreeLists() throws IOException {
        BitSet listed = new BitSet();
        for (long[] f : freeLists) {
            String where = where(f[0]) + " of the " + FREE_DB + ": node " + f[1] + "'s list of free pages";
            if (f[3] < 8 || f[3] % 8 != 0 || f[3] > Integer.MAX_VALUE) {
                throw damage(where + " is " + f[3] + " bytes, not a count and page numbers");
            }
            ByteBuffer v = ByteBuffer.allocate((int) f[3]).order(ByteOrder.LITTLE_ENDIAN);
            while (v.hasRemaining()) {
                if (ch.read(v, f[2] + v.position()) < 0) {
                    throw damage(where + " runs past the end of the file");
                }
            }
            long count = v.getLong(0);
            if (count != f[3] / 8 - 1) {
                throw damage(where + " says " + count + " pages in " + f[3] + " bytes");
            }
            for (int i = 1; i <= count; i++) {
                long pg = v.getLong(8 * i);
                if (pg < 2 || pg > meta.lastPage()) {
                    throw damage(where + " names page " + pg + ", outside pages 2.." + meta.lastPage());
                }
                if (seen.get((int) pg) || listed.get((int) pg)) {
                    throw damage(where + " names page " + pg + ", which is " + (seen.get((int) pg) ? "in use"
                            : "listed twice") + ": a writer would overwrite it");
                }
                listed.set((int) pg);
            }
        }
    }

    private void walkDb(String name, Db db, int expectFlags, boolean holdsNamed) throws IOException {
        if (db.root() == P_INVALID) {
            if (db.depth() != 0 || (deep && db.entries() != 0)) {
                throw damage(name + " is empty but says depth " + db.depth() + ", " + db.entries() + " entries");
            }
            return;
        }
        if ((db.flags() & ~0x7f) != 0 || (db.flags() & ~MDB_INTEGERKEY) != (expectFlags & ~MDB_INTEGERKEY)) {
            throw damage(name + " has flags 0x" + Integer.toHexString(db.flags()) + ", ptfence uses 0x"
                    + Integer.toHexString(expectFlags));
        }
        if (db.depth() < 1 || db.depth() > MAX_DEPTH) {
            throw damage(name + " says depth " + db.depth());
        }
        long before = entries;
        walkPage(name, db.root(), db.depth(), holdsNamed);
        if (deep && entries - before != db.entries()) {
            throw damage(name + " says " + db.entries() + " entries, its leaves hold " + (entries - before));
        }
    }

    private void walkPage(String name, long pgno, int depth, boolean holdsNamed) throws IOException {
        ByteBuffer p = treePage(name, pgno);
        int psize = meta.pageSize();
        int flags = p.getShort(10) & 0xffff;
        int lower = p.getShort(12) & 0xffff;
        int upper = p.getShort(14) & 0xffff;
        boolean leaf = depth == 1;
        int kind = flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_META | 0x20 | 0x40);
        if (kind != (leaf ? P_LEAF : P_BRANCH)) {
            throw damage(where(pgno) + " of the " + name + " has flags 0x" + Integer.toHexString(flags) + ", expected a "
                    + (leaf ? "leaf" : "branch") + " page at this depth");
        }
        if (lower < PAGE_HEADER || lower > upper || upper > psize || (lower & 1) != 0) {
            throw damage(where(pgno) + " of the " + name + ": free space bounds " + lower + ".." + upper
                    + " do not fit a page of " + psize);
        }
        int n = (lower - PAGE_HEADER) / 2;
        if (!leaf && n < 1) {
            throw damage(where(pgno) + " of the " + name + ": a branch page with no child");
        }
        int[] ptr = new int[n];
        for (int i = 0; i < n; i++) {
            ptr[i] = p.getShort(PAGE_HEADER + 2 * i) & 0xffff;
        }
        // children are walked after this page's own checks, from a copy: the buffer is reused
        byte[] prevKey = null;
        long[] children = leaf ? null : new long[n];
        for (int i = 0; i < n; i++) {
            int at = ptr[i];
            if (at < upper || at + NODE_HEADER > psize) {
                throw damage(where(pgno) + " of the " + name + ": node " + i + " at " + at + " lies outside the page's "
                        + "node area " + upper + ".." + psize);
            }
            int lo = p.getShort(at) & 0xffff;
            int hi = p.getShort(at + 2) & 0xffff;
            int nflags = p.getShort(at + 4) & 0xffff;
            int ksize = p.getShort(at + 6) & 0xffff;
            int keyEnd = at + NODE_HEADER + ksize;
            if (keyEnd > psize) {
                throw damage(where(pgno) + " of the " + name + ": node " + i + "'s key of " + ksize
                        + " bytes runs past the page");
            }
            if (deep && (leaf || i > 0)) {
                byte[] key = new byte[ksize];
                p.get(at + NODE_HEADER, key);
                // the free-page database's keys are native-endian integers, not memcmp-ordered
                if (prevKey != null && Arrays.compareUnsigned(prevKey, key) >= 0 && !name.startsWith("free")) {
                    throw damage(where(pgno) + " of the " + name + ": keys out of order at node " + i);
                }
                prevKey = key;
            }
            if (!leaf) {
                children[i] = lo | ((long) hi << 16) | ((long) nflags << 32);
                continue;
            }
            entries++;
            long dsize = lo | ((long) hi << 16);
            if ((nflags & ~(F_BIGDATA | F_SUBDATA)) != 0 || (nflags & F_SUBDATA) != 0 && !holdsNamed) {
                throw damage(where(pgno) + " of the " + name + ": node " + i + " has flags 0x"
                        + Integer.toHexString(nflags));
            }
            if ((nflags & F_BIGDATA) != 0) {
                if (keyEnd + 8 > psize || (nflags & F_SUBDATA) != 0) {
                    throw damage(where(pgno) + " of the " + name + ": node " + i + "'s overflow reference runs past "
                            + "the page");
                }
                long first = p.getLong(keyEnd);
                overflow(name, pgno, i, first, dsize);
                if (deep && name.equals(FREE_DB)) {
                    freeLists.add(new long[] {pgno, i, first * psize + PAGE_HEADER, dsize});
                }
            } else if (keyEnd + dsize > psize) {
                throw damage(where(pgno) + " of the " + name + ": node " + i + "'s value of " + dsize
                        + " bytes runs past the page");
            } else if (deep && name.equals(FREE_DB)) {
                freeLists.add(new long[] {pgno, i, pgno * psize + keyEnd, dsize});
            } else if ((nflags & F_SUBDATA) != 0) {
                if (dsize != DB_RECORD) {
                    throw damage(where(pgno) + " of the " + name + ": named database record of " + dsize + " bytes");
                }
                byte[] key = new byte[ksize];
                p.get(at + NODE_HEADER, key);
                named.add(new Object[] {"database '" + new String(key, java.nio.charset.StandardCharsets.UTF_8)
                        .replaceAll("[^ -~]", "?") + "'", db(p, keyEnd)});
            }
        }
        if (children != null) {
            for (long child : children) {
                walkPage(name, child, depth - 1, holdsNamed);
            }
        }
    }

    private void overflow(String name, long pgno, int node, long first, long dsize) throws IOException {
        int psize = meta.pageSize();
        long pages = (PAGE_HEADER + dsize + psize - 1) / psize;
        if (first < 2 || first > meta.lastPage() || pages > meta.lastPage() + 1 - first) {
            throw damage(where(pgno) + " of the " + name + ": node " + node + "'s value of " + dsize
                    + " bytes on overflow pages " + first + ".." + (first + pages - 1)
                    + " lies beyond the last page " + meta.lastPage());
        }
        if ((first + pages) * psize > size) {
            throw pastEnd(where(pgno) + " of the " + name + ": node " + node + "'s overflow pages " + first + ".."
                    + (first + pages - 1) + " end at offset " + (first + pages) * psize + ", past the end of the file ("
                    + size + " bytes)");
        }
        int clash = seen.nextSetBit((int) first);
        if (clash >= 0 && clash < first + pages) {
            throw damage(where(pgno) + " of the " + name + ": node " + node + "'s overflow pages " + first + ".."
                    + (first + pages - 1) + " overlap page " + clash + ", which is used elsewhere");
        }
        seen.set((int) first, (int) (first + pages));
        overflowPages += pages;
        if (deep) {
            header.clear();
            while (header.hasRemaining()) {
                if (ch.read(header, first * psize + header.position()) < 0) {
                    throw damage(where(first) + ": the file ends inside it");
                }
            }
            ByteBuffer h = header.flip();
            int flags = h.getShort(10) & 0xffff;
            if (h.getLong(0) != first || (flags & P_OVERFLOW) == 0 || (h.getInt(12) & 0xffffffffL) < pages) {
                throw damage(where(first) + ": not the overflow run of " + pages + " page(s) that " + where(pgno)
                        + " node " + node + " of the " + name + " points to");
            }
        }
    }

    private ByteBuffer treePage(String name, long pgno) throws IOException {
        int psize = meta.pageSize();
        if (pgno < 2 || pgno > meta.lastPage()) {
            throw damage("the " + name + " points to page " + pgno + ", outside pages 2.." + meta.lastPage());
        }
        if ((pgno + 1) * psize > size) {
            throw pastEnd(where(pgno) + " of the " + name + " ends past the end of the file (" + size + " bytes)");
        }
        if (seen.get((int) pgno)) {
            throw damage(where(pgno) + " of the " + name + " is reached twice");
        }
        seen.set((int) pgno);
        treePages++;
        ByteBuffer p = read(pgno * psize, psize);
        if (p.getLong(0) != pgno) {
            throw damage(where(pgno) + " of the " + name + " says it is page " + p.getLong(0));
        }
        return p;
    }

    private String where(long pgno) {
        return "page " + pgno + " (offset " + pgno * meta.pageSize() + ")";
    }

    private BadInputException damage(String what) {
        return new BadInputException(file + ": damaged: " + what);
    }

    /** A page past the end of the file; says how much shorter the file is than its meta page says. */
    private BadInputException pastEnd(String what) {
        String cut = size < meta.neededBytes() ? "; the file is " + size + " bytes but meta page " + meta.index() + " (txn "
                + meta.txnId() + ") says " + (meta.lastPage() + 1) + " pages of " + meta.pageSize() + " ("
                + meta.neededBytes() + " bytes): cut short" : "";
        return damage(what + cut);
    }

    private ByteBuffer read(long offset, int length) throws IOException {
        page.clear().limit(length);
        while (page.hasRemaining()) {
            if (ch.read(page, offset + page.position()) < 0) {
                throw new BadInputException(file + ": ends at " + (offset + page.position()) + " bytes, inside the page at "
                        + "offset " + offset);
            }
        }
        return page.flip();
    }
}
