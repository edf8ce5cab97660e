package ptfence.fence;

/** Where an image was copied. */
public enum Hook {
    /** In the loading thread, before bpf(BPF_PROG_LOAD) returns (raw_tp/sys_exit). */
    LOAD,
    /** In the kworker, immediately before bpf_prog_free_deferred frees the JIT text. */
    FREE,
    /** Before a BPF trampoline image is freed. */
    TRAMPOLINE_FREE,
    /**
     * The half of a BPF dispatcher in force, copied in the kernel as the update that switched to it returns (fexit
     * bpf_dispatcher_change_prog); preferred to the KERNEL_READ at the switch's TEXT_POKE ({@link DispatcherCopies}).
     */
    DISPATCHER_SWITCH,
    /**
     * A BPF trampoline image copied in the kernel as its build returns (fexit arch_prepare_bpf_trampoline), the
     * version from the attach poke that calls it; preferred to the KERNEL_READ at that poke ({@link TrampolineCopies}).
     */
    TRAMPOLINE_BUILD,
    /**
     * Where the build hook cannot attach (6.1): the image in force copied as the update that attached it returns
     * (fexit bpf_trampoline_update), after the attach poke and before any later update can poke inside it.
     */
    TRAMPOLINE_UPDATE,
    /** Read on demand (dispatcher pages, trampolines, core kernel text): /proc/kcore or the BPF read program. */
    KERNEL_READ,
    /** The startup scan of programs that were loaded before the fence. */
    SCAN,
    /** The user-space fallback: the program pinned by id and read with BPF_OBJ_GET_INFO_BY_FD. */
    USER_SPACE,
    /** A kernel module's core or init text, copied at raw_tp module_load before its init runs. */
    MODULE_LOAD,
    /** A module loaded before the fence, copied at start. */
    MODULE_SCAN,
    /** A module's core text at raw_tp module_free, before it is freed; an init text when do_free_init frees it. */
    MODULE_FREE
}
