package ptfence.packet;

import ptfence.cli.BadInputException;

/**
 * Intel PT errata of a processor that change how a trace must be read, as libipt's {@code pt_cpu_errata}
 * assigns them by family/model. The packet layer uses SKD007 and SKZ84, timing uses SKL168; the others are
 * for the flow decoder.
 */
public record Errata(boolean bdm70, boolean bdm64, boolean skd007, boolean skd022, boolean skd010,
                     boolean skl014, boolean apl12, boolean apl11, boolean skl168, boolean skz84) {

    /** No known errata (ptdump's default, no {@code --cpu}). */
    public static final Errata NONE = new Errata(false, false, false, false, false, false, false, false, false, false);

    /**
     * The errata of an Intel CPU.
     *
     * @throws UnknownCpuException if the family/model is not one libipt knows (ptdump reports
     *     "unknown cpu" and decodes without errata)
     */
    public static Errata of(Cpu cpu) {
        int m = cpu.model();
        switch (cpu.family()) {
            case 6:
                switch (m) {
                    case 0x3d: case 0x47: case 0x4f: case 0x56:
                        return new Errata(true, true, false, false, false, false, false, false, false, false);
                    case 0x4e: case 0x5e: case 0x8e: case 0x9e: case 0xa5: case 0xa6:
                        return new Errata(true, false, true, true, true, true, false, false, true, false);
                    case 0x55: case 0x6a: case 0x6c:
                        return new Errata(true, false, false, true, false, true, false, false, false, true);
                    case 0x8f: case 0xcf: case 0xad: case 0xae:
                        return new Errata(true, false, false, true, false, false, false, false, false, true);
                    case 0x66: case 0x7d: case 0x7e: case 0x8c: case 0x8d: case 0xa7: case 0xa8:
                        return new Errata(true, false, false, true, false, true, false, false, false, false);
                    case 0x97: case 0x9a: case 0xba: case 0xb7: case 0xbf: case 0xc5: case 0xc6: case 0xb5:
                    case 0xaa: case 0xac: case 0xbd: case 0xcc: case 0xd5:
                        return new Errata(true, false, false, true, false, false, false, true, false, false);
                    case 0x5c: case 0x5f:
                        return new Errata(false, false, false, false, false, false, true, true, false, false);
                    case 0x7a: case 0x86: case 0x96: case 0x9c: case 0xb6: case 0xaf: case 0xdd:
                        return new Errata(false, false, false, false, false, false, false, true, false, false);
                    default:
                        break;
                }
                break;
            case 0x12:
                if (m == 0x01 || m == 0x03) {
                    return new Errata(true, false, false, true, false, false, false, true, false, false);
                }
                break;
            case 0x13:
                if (m == 0x01) {
                    return new Errata(true, false, false, true, false, false, false, false, false, true);
                }
                break;
            default:
                break;
        }
        throw new UnknownCpuException(cpu);
    }

    /** An Intel family/model/stepping as ptdump's {@code --cpu f/m[/s]} gives it. */
    public record Cpu(int family, int model, int stepping) {
        /**
         * Parses {@code f/m[/s]} (C integer literals; family up to 65535, model and stepping up to 255).
         *
         * @throws BadInputException if malformed
         */
        public static Cpu parse(String s) {
            String[] parts = s.split("/", -1);
            if (parts.length < 2 || parts.length > 3) {
                throw bad(s);
            }
            try {
                long f = TraceSource.parseCInteger(parts[0]);
                long m = TraceSource.parseCInteger(parts[1]);
                long st = parts.length == 3 ? TraceSource.parseCInteger(parts[2]) : 0;
                if (f > 0xffff || m > 0xff || st > 0xff || f < 0 || m < 0 || st < 0) {
                    throw bad(s);
                }
                return new Cpu((int) f, (int) m, (int) st);
            } catch (NumberFormatException e) {
                throw bad(s);
            }
        }

        private static BadInputException bad(String s) {
            return new BadInputException("cpu must be specified as f/m[/s], not '" + s + "'");
        }
    }

    /** The CPU is not one whose errata are known. */
    public static final class UnknownCpuException extends BadInputException {
        private static final long serialVersionUID = 1L;

        public UnknownCpuException(Cpu cpu) {
            super("unknown cpu " + cpu.family() + "/" + cpu.model() + "/" + cpu.stepping());
        }
    }
}
