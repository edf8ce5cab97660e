package ptfence.output;

import ptfence.flow.Event;

/** Stable event names for the machine-readable formats (docs/flow.md). */
public final class EventNames {
    private EventNames() {}

    public static String of(int type) {
        return switch (type) {
            case Event.ENABLED -> "enabled";
            case Event.DISABLED -> "disabled";
            case Event.ASYNC_DISABLED -> "async_disabled";
            case Event.ASYNC_BRANCH -> "interrupt";
            case Event.PAGING -> "paging";
            case Event.ASYNC_PAGING -> "async_paging";
            case Event.OVERFLOW -> "overflow";
            case Event.EXEC_MODE -> "exec_mode";
            case Event.TSX -> "tsx";
            case Event.STOP -> "stopped";
            case Event.VMCS -> "vmcs";
            case Event.ASYNC_VMCS -> "async_vmcs";
            case Event.EXSTOP -> "exstop";
            case Event.MWAIT -> "mwait";
            case Event.PWRE -> "pwre";
            case Event.PWRX -> "pwrx";
            case Event.PTWRITE -> "ptwrite";
            case Event.TICK -> "tick";
            case Event.CBR -> "cbr";
            case Event.MNT -> "mnt";
            default -> "unknown";
        };
    }
}
